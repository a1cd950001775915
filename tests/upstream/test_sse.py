from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chat.upstream import UpstreamError
from chat.upstream.sse import SSEDecoder

CASES = {
    "one event": ([b"data: {}\n\n"], [["{}"]], []),
    "line split across reads": (
        [b"da", b'ta: {"a"', b":1}\n", b"\n"],
        [[], [], [], ['{"a":1}']],
        [],
    ),
    "CRLF": ([b"data: x\r\n\r\n"], [["x"]], []),
    "CR of CRLF in the next read": ([b"data: x\r", b"\n\r\n"], [[], ["x"]], []),
    "ping comment": ([b": ping\n\ndata: x\n\n"], [["x"]], []),
    "comment with no space": ([b":keep-alive\n\n"], [[]], []),
    "event, id and retry fields": (
        [b"event: message\nid: 7\nretry: 100\ndata: x\n\n"],
        [["x"]],
        [],
    ),
    "multi-line data": ([b"data: a\ndata: b\n\n"], [["a\nb"]], []),
    "data without a space": ([b"data:x\n\n"], [["x"]], []),
    "only the first space is stripped": ([b"data:  x\n\n"], [[" x"]], []),
    "several events in one read": (
        [b"data: 1\n\ndata: 2\n\ndata: [DONE]\n\n"],
        [["1", "2", "[DONE]"]],
        [],
    ),
    "UTF-8 split across reads": (
        [
            "data: caf\u00e9 \U0001f680\n\n".encode()[:9],
            "data: caf\u00e9 \U0001f680\n\n".encode()[9:],
        ],
        [[], ["caf\u00e9 \U0001f680"]],
        [],
    ),
    "blank lines alone are no events": ([b"\n\n\r\n"], [[]], []),
    "last event without a blank line": ([b"data: x\n"], [[]], ["x"]),
    "last line without a newline": ([b"data: x"], [[]], ["x"]),
    "empty data line": ([b"data:\n\n"], [[""]], []),
}


@pytest.mark.parametrize(
    ("reads", "expected", "at_close"), CASES.values(), ids=CASES.keys()
)
def test_feed(reads, expected, at_close):
    decoder = SSEDecoder()
    assert [decoder.feed(r) for r in reads] == expected
    assert decoder.close() == at_close


def test_endless_event_is_refused():
    decoder = SSEDecoder(max_event=1024)
    decoder.feed(b"data: " + b"x" * 1000 + b"\n")
    with pytest.raises(UpstreamError) as info:
        decoder.feed(b"data: " + b"y" * 100)
    assert info.value.code == "malformed"
    assert "longer than" in info.value.detail


def test_long_event_within_the_limit():
    text = "x" * 3_000_000
    decoder = SSEDecoder()
    data = f"data: {text}\n\n".encode()
    events = [
        e for i in range(0, len(data), 65536) for e in decoder.feed(data[i : i + 65536])
    ]
    assert events == [text]


DATA = st.text(st.characters(codec="utf-8", blacklist_characters="\r\n"), max_size=20)
LINE_END = st.sampled_from([b"\n", b"\r\n"])


# No deadline: the machine is shared, and speed is the benchmark's business.
@settings(deadline=None)
@given(
    events=st.lists(st.lists(DATA, min_size=1, max_size=3), max_size=8),
    end=LINE_END,
    pings=st.booleans(),
    data=st.data(),
)
def test_any_split_of_a_stream_gives_the_same_events(events, end, pings, data):
    stream = b""
    for lines in events:
        if pings:
            stream += b": ping" + end + end
        stream += b"".join(b"data: " + line.encode() + end for line in lines) + end
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=30)))
    reads = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]

    decoder = SSEDecoder()
    decoded = [e for r in reads for e in decoder.feed(r)] + decoder.close()

    assert decoded == ["\n".join(lines) for lines in events]
