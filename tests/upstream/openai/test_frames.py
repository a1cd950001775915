"""The OpenAI stream reader on every edge case of docs/model-servers.md section 4,
one frame sequence each, and on the sequences that end in an error."""

from __future__ import annotations

import pytest

from chat.upstream import Delta, Finished
from tests.upstream.openai.answering import (
    BASE,
    DONE,
    STOP,
    USAGE,
    chunk,
    decode,
    event,
    text,
)

TIMINGS = {
    "cache_n": 236,
    "prompt_n": 1,
    "prompt_ms": 30.9,
    "prompt_per_token_ms": 30.9,
    "prompt_per_second": 32.3,
    "predicted_n": 35,
    "predicted_ms": 661.0,
    "predicted_per_token_ms": 18.9,
    "predicted_per_second": 52.9,
}


# --- every edge case of docs/model-servers.md section 4, one frame sequence each

FRAMES = {
    "content deltas": (
        [event(chunk(content="Hel")), event(chunk(content="lo")), DONE],
        [Delta("content", "Hel"), Delta("content", "lo"), Finished(done_reason="")],
    ),
    "role-only first chunk and empty finish chunk (4.4)": (
        [
            event(chunk(role="assistant", content="")),
            event(chunk(content="Hi")),
            event(chunk("stop")),
            DONE,
        ],
        [Delta("content", "Hi"), STOP],
    ),
    "reasoning_content (llama.cpp, SGLang, old vLLM) (4.5)": (
        [
            event(chunk(reasoning_content="Hmm")),
            event(chunk(content="Yes")),
            event(chunk("stop")),
            DONE,
        ],
        [Delta("thinking", "Hmm"), Delta("content", "Yes"), STOP],
    ),
    "reasoning (new vLLM, Ollama /v1) (4.12)": (
        [event(chunk(reasoning="Hmm")), event(chunk("stop", content="Yes")), DONE],
        [Delta("thinking", "Hmm"), Delta("content", "Yes"), STOP],
    ),
    "reasoning and content in one chunk": (
        [event(chunk(reasoning_content="a", content="b")), DONE],
        [Delta("thinking", "a"), Delta("content", "b"), Finished(done_reason="")],
    ),
    "empty reasoning field beside the other": (
        [event(chunk(reasoning_content="", reasoning="a")), DONE],
        [Delta("thinking", "a"), Finished(done_reason="")],
    ),
    "inline think tags split across chunks (2.6)": (
        [
            event(chunk(content="<th")),
            event(chunk(content="ink>\nHmm")),
            event(chunk(content="\n</think>\n\nYes")),
            DONE,
        ],
        [Delta("thinking", "Hmm"), Delta("content", "Yes"), Finished(done_reason="")],
    ),
    "finish chunk carries the last text (4.6)": (
        [event(chunk("length", content="end")), DONE],
        [Delta("content", "end"), Finished(done_reason="length")],
    ),
    "usage chunk with choices [] (4.6)": (
        [
            event(chunk(content="x")),
            event(chunk("stop")),
            event({**chunk(), "choices": [], "usage": USAGE}),
            DONE,
        ],
        [
            Delta("content", "x"),
            Finished(done_reason="stop", prompt_tokens=26, output_tokens=282),
        ],
    ),
    "usage chunk with choices null": (
        [event(chunk("stop")), event({"choices": None, "usage": USAGE}), DONE],
        [Finished(done_reason="stop", prompt_tokens=26, output_tokens=282)],
    ),
    "llama.cpp timings on the last chunk": (
        [event(chunk(content="x")), event({**chunk("stop"), "timings": TIMINGS}), DONE],
        [
            Delta("content", "x"),
            Finished(
                done_reason="stop",
                prompt_tokens=1,
                prompt_eval_ms=30.9,
                output_tokens=35,
                eval_ms=661.0,
                total_ms=691.9,
            ),
        ],
    ),
    "usage counts win over timings": (
        [event({"choices": [], "usage": USAGE, "timings": TIMINGS}), DONE],
        [
            Finished(
                done_reason="",
                prompt_tokens=26,
                prompt_eval_ms=30.9,
                output_tokens=282,
                eval_ms=661.0,
                total_ms=691.9,
            )
        ],
    ),
    "ping comments and event fields (4.7)": (
        [b": ping\n\n", b"event: message\nid: 1\n" + event(chunk(content="x")), DONE],
        [Delta("content", "x"), Finished(done_reason="")],
    ),
    "UTF-8 split across reads (4.1)": (
        [
            event(chunk(content="caf\u00e9"))[:-6],
            event(chunk(content="caf\u00e9"))[-6:],
            DONE,
        ],
        [Delta("content", "caf\u00e9"), Finished(done_reason="")],
    ),
    "event split across reads, several in one read (4.2)": (
        [
            event(chunk(content="a"))[:10],
            event(chunk(content="a"))[10:] + event(chunk(content="b")) + DONE,
        ],
        [Delta("content", "a"), Delta("content", "b"), Finished(done_reason="")],
    ),
    "very long line (4.3)": (
        [event(chunk(content="x" * 2_000_000)), DONE],
        [Delta("content", "x" * 2_000_000), Finished(done_reason="")],
    ),
    "unknown fields and finish reasons (4.12)": (
        [
            event(
                {
                    **chunk("content_filter", content="a", extra=1),
                    "system_fingerprint": "f",
                    "new": {},
                }
            ),
            DONE,
        ],
        [Delta("content", "a"), Finished(done_reason="content_filter")],
    ),
    "no [DONE] after the finish chunk": (
        [event(chunk("stop", content="a"))],
        [Delta("content", "a"), STOP],
    ),
    "events without the blank line between them": (
        [
            b'data: {"choices":[{"delta":{"content":"a"}}]}\n'
            b'data: {"choices":[{"delta":{"content":"b"}}]}\n'
            b"data: [DONE]\n\n"
        ],
        [Delta("content", "a"), Delta("content", "b"), Finished(done_reason="")],
    ),
    "CRLF line ends": (
        [event(chunk(content="a")).replace(b"\n", b"\r\n"), b"data: [DONE]\r\n\r\n"],
        [Delta("content", "a"), Finished(done_reason="")],
    ),
    "a thinking-only answer cut by length (4.5)": (
        [event(chunk(reasoning_content="Hmm")), event(chunk("length")), DONE],
        [Delta("thinking", "Hmm"), Finished(done_reason="length")],
    ),
}


@pytest.mark.parametrize(("reads", "expected"), FRAMES.values(), ids=FRAMES.keys())
def test_frames(reads, expected):
    events, error, reader = decode(reads)
    assert error is None
    assert events == expected
    assert reader.malformed == 0


ERRORS = {
    "error object mid-stream, then [DONE] (4.8)": (
        [
            event(chunk(content="partial")),
            event(
                {
                    "error": {
                        "message": "out of memory",
                        "type": "server_error",
                        "code": 500,
                    }
                }
            )
            + DONE,
        ],
        "upstream_error",
        "The model server reported an error while answering: out of memory.",
    ),
    "old vLLM top-level error": (
        [event({"object": "error", "message": "bad things", "code": 400})],
        "upstream_error",
        "bad things.",
    ),
    "string error": (
        [event({"error": "model runner has unexpectedly stopped"})],
        "upstream_error",
        "model runner has unexpectedly stopped.",
    ),
    "cut before the end (no finish, no [DONE])": (
        [event(chunk(content="partial"))],
        "stream_cut",
        f"The model server at {BASE} stopped before the answer was complete",
    ),
    "cut inside an event": (
        [event(chunk(content="partial")) + b'data: {"id":'],
        "stream_cut",
        "stopped before the answer was complete",
    ),
    "empty body": ([], "stream_cut", "stopped before the answer was complete"),
    "nothing is JSON: not this protocol": (
        [b"data: <html>\n\n", b"data: nope\n\n"],
        "malformed",
        "did not answer in the OpenAI-compatible format",
    ),
}


@pytest.mark.parametrize(
    ("reads", "code", "detail"), ERRORS.values(), ids=ERRORS.keys()
)
def test_frames_ending_in_an_error(reads, code, detail):
    events, error, _ = decode(reads)
    assert error is not None
    assert error.code == code
    assert detail in error.detail
    partial = [e for e in events if isinstance(e, Delta)]
    assert text(partial, "content") == (
        "partial" if b"partial" in b"".join(reads) else ""
    )
