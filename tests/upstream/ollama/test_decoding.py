"""The Ollama stream decoded: the NDJSON decoder, the events of a chunk, any split
of a stream."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chat.upstream import Delta, Finished, UpstreamError
from chat.upstream.ollama import NDJSONDecoder, events_from_chunk
from tests.upstream.ollama.answering import FINISHED, METRICS, chunk, done, line

# --- NDJSONDecoder -----------------------------------------------------------

LONG = "x" * (9 * 1024 * 1024)
LONG_LINE = line({"long": LONG})
EMOJI = line({"t": "h\u00e9 \U0001f600"})

DECODER_CASES = {
    "one line per read": ([b'{"a":1}\n', b'{"b":2}\n'], [[{"a": 1}], [{"b": 2}]]),
    "line split across reads": ([b'{"a":', b"1}", b"\n"], [[], [], [{"a": 1}]]),
    "several lines in one read": ([b'{"a":1}\n{"b":2}\n'], [[{"a": 1}, {"b": 2}]]),
    "tail completes next read": (
        [b'{"a":1}\n{"b"', b":2}\n"],
        [[{"a": 1}], [{"b": 2}]],
    ),
    "utf-8 char split across reads": (
        [EMOJI[:9], EMOJI[9:13], EMOJI[13:]],
        [[], [], [{"t": "h\u00e9 \U0001f600"}]],
    ),
    "blank lines ignored": (
        [b"\n\n", b'  \n{"a":1}\n\r\n', b"\t\n"],
        [[], [{"a": 1}], []],
    ),
    "crlf line endings": ([b'{"a":1}\r\n{"b":2}\r\n'], [[{"a": 1}, {"b": 2}]]),
    "very long line in 64 KiB reads": (
        [LONG_LINE[i : i + 65536] for i in range(0, len(LONG_LINE), 65536)],
        [[]] * (len(LONG_LINE) // 65536) + [[{"long": LONG}]],
    ),
    "empty read": ([b""], [[]]),
}


@pytest.mark.parametrize(
    ("reads", "expected"), DECODER_CASES.values(), ids=DECODER_CASES.keys()
)
def test_decoder_feed(reads: list[bytes], expected: list[list[dict[str, Any]]]):
    decoder = NDJSONDecoder()
    assert [decoder.feed(data) for data in reads] == expected
    assert decoder.close() == []
    assert decoder.malformed == 0


MALFORMED_CASES = {
    "not json": (b'{"a":1}\nnot json\n{"b":2}\n', 1),
    "truncated object": (b'{"a":1}\n{"b":\n{"b":2}\n', 1),
    "json but not an object": (b'[1]\n"s"\n3\nnull\n{"a":1}\n{"b":2}\n', 4),
    "invalid utf-8": (b'{"a":1}\n\xff\xfe\n{"b":2}\n', 1),
    "deep nesting": (b'{"a":1}\n' + b"[" * 100_000 + b'\n{"b":2}\n', 1),
}


@pytest.mark.parametrize(
    ("data", "bad"), MALFORMED_CASES.values(), ids=MALFORMED_CASES.keys()
)
def test_decoder_skips_malformed_lines(data: bytes, bad: int, warnings_logged):
    decoder = NDJSONDecoder()
    assert decoder.feed(data) == [{"a": 1}, {"b": 2}]
    assert (decoder.parsed, decoder.malformed) == (2, bad)
    # One warning per stream, however many bad lines: a wrong URL can send a page.
    [warning] = warnings_logged()
    assert "not JSON" in warning.getMessage()


def test_decoder_close_parses_unterminated_last_line():
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a":1}\n{"b":') == [{"a": 1}]
    assert decoder.feed(b"2}") == []
    assert decoder.close() == [{"b": 2}]
    assert decoder.close() == []


def test_decoder_close_ignores_blank_remainder():
    decoder = NDJSONDecoder()
    decoder.feed(b'{"a":1}\n  ')
    assert decoder.close() == []
    assert decoder.malformed == 0


def test_decoder_refuses_endless_line():
    decoder = NDJSONDecoder(max_line=1024 * 1024)
    decoder.feed(b"x" * 1024 * 1024)
    with pytest.raises(UpstreamError) as info:
        decoder.feed(b"x")
    assert info.value.code == "malformed"
    assert "longer than 1 MiB" in info.value.detail


# --- events_from_chunk -------------------------------------------------------

CHUNK_CASES = {
    "thinking only": (
        chunk(thinking="Okay, the user"),
        [Delta("thinking", "Okay, the user")],
    ),
    "content": (chunk("Hello"), [Delta("content", "Hello")]),
    "empty content": (chunk(""), []),
    "thinking then content in one chunk": (
        chunk("Hi", thinking="hm"),
        [Delta("thinking", "hm"), Delta("content", "Hi")],
    ),
    "whitespace content kept": (chunk(" \n"), [Delta("content", " \n")]),
    "done with metrics": (done(**METRICS), [FINISHED]),
    "content in the done chunk comes first": (
        done("!", **METRICS),
        [Delta("content", "!"), FINISHED],
    ),
    "done without metrics": (done(), [Finished(done_reason="")]),
    "done with some metrics": (
        done(done_reason="length", eval_count=5, eval_duration=2_000_000),
        [Finished(done_reason="length", output_tokens=5, eval_ms=2.0)],
    ),
    "load": (done(done_reason="load"), [Finished(done_reason="load")]),
    "unknown fields tolerated": (
        {**chunk("a"), "logprobs": [], "remote_host": "x", "_debug_info": {}},
        [Delta("content", "a")],
    ),
    "odd types ignored": (
        {"message": {"content": 5, "thinking": None}, "done": "yes"},
        [],
    ),
    "message not an object": ({"message": "hi", "done": False}, []),
    "bad metric types": (
        done(done_reason=1, eval_count="5", eval_duration=True),
        [Finished(done_reason="")],
    ),
    "empty error ignored": ({**chunk("a"), "error": ""}, [Delta("content", "a")]),
}


@pytest.mark.parametrize(
    ("data", "expected"), CHUNK_CASES.values(), ids=CHUNK_CASES.keys()
)
def test_events_from_chunk(data: dict[str, Any], expected: list[object]):
    assert events_from_chunk(data) == expected


@pytest.mark.parametrize(
    ("error", "message"),
    [
        ("model runner has unexpectedly stopped", "model runner has unexpectedly"),
        ({"message": "out of memory", "type": "server_error"}, "out of memory"),
    ],
)
def test_events_from_chunk_error_line(error: object, message: str):
    with pytest.raises(UpstreamError) as info:
        events_from_chunk({"error": error})
    assert info.value.code == "upstream_error"
    assert message in info.value.detail
    assert info.value.detail.endswith(".")
    assert info.value.status is None


# --- any split of a stream decodes the same ------------------------------------

TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
PIECES = st.lists(
    st.tuples(st.sampled_from(["thinking", "content"]), TEXT), max_size=12
)


@given(pieces=PIECES, last=TEXT, blank=st.booleans(), data=st.data())
def test_any_split_of_a_stream_gives_the_same_events(pieces, last, blank, data):
    chunks = [
        chunk(text) if kind == "content" else chunk("", text) for kind, text in pieces
    ]
    stream = b"".join(line(c) + (b"\n" if blank else b"") for c in chunks)
    stream += line(done(last, **METRICS))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=30)))
    reads = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]

    decoder = NDJSONDecoder()
    events = [e for r in reads for c in decoder.feed(r) for e in events_from_chunk(c)]
    events += [e for c in decoder.close() for e in events_from_chunk(c)]

    def joined(kind: str) -> str:
        return "".join(
            e.text for e in events if isinstance(e, Delta) and e.kind == kind
        )

    assert joined("thinking") == "".join(t for k, t in pieces if k == "thinking")
    assert joined("content") == "".join(t for k, t in pieces if k == "content") + last
    assert events[-1] == FINISHED
    assert decoder.malformed == 0
