from __future__ import annotations

import json
import logging
from contextlib import aclosing
from typing import Any

import httpx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from chat.upstream import Delta, Event, Finished, OpenAIClient, UpstreamError
from chat.upstream.openai import (
    StreamReader,
    ThinkingControl,
    openai_options,
    soft_switched,
)
from chat.upstream.thinktags import ThinkTagSplitter
from tests.upstream.fake_servers import Body, Server, answer, raising, stream_of

BASE = "http://vllm.test:8000"
TIMEOUT = httpx.Timeout(5, read=300)
MODEL = "Qwen/Qwen3-8B"


def event(obj: object) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"


def chunk(finish: str | None = None, **delta: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": MODEL,
        "choices": [choice],
    }


USAGE = {"prompt_tokens": 26, "completion_tokens": 282, "total_tokens": 308}
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


def decode(
    reads: list[bytes], *, splitter: ThinkTagSplitter | None = None
) -> tuple[list[Event], UpstreamError | None, StreamReader]:
    """The events of a whole body read in `reads`, and the error it ends with."""
    reader = StreamReader(
        BASE, splitter if splitter is not None else ThinkTagSplitter()
    )
    events: list[Event] = []
    for data in reads:
        got, error = reader.feed(data)
        events += got
        if error is not None:
            return events, error, reader
        if reader.finished:
            return events, None, reader
    got, error = reader.close()
    return events + got, error, reader


def text(events: list[Event], kind: str) -> str:
    return "".join(e.text for e in events if isinstance(e, Delta) and e.kind == kind)


# --- every edge case of docs/model-servers.md section 4, one frame sequence each

STOP = Finished(done_reason="stop")

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


def test_malformed_event_is_skipped_and_logged(caplog):
    reads = [
        event(chunk(content="a")),
        b'data: {"id":"x","obj\n\n',
        event(chunk(content="b")),
        DONE,
    ]
    with caplog.at_level(logging.WARNING, logger="chat.upstream"):
        events, error, reader = decode(reads)
    assert error is None
    assert text(events, "content") == "ab"
    assert reader.malformed == 1
    assert "not JSON" in caplog.text or "non-JSON" in caplog.text


def test_close_only_profile_splits_reasoning_without_an_opening_tag():
    reads = [
        event(chunk(content="Let me see.")),
        event(chunk(content="</think>\n\nYes.")),
        DONE,
    ]
    events, _, _ = decode(reads, splitter=ThinkTagSplitter(opened=True))
    assert (text(events, "thinking"), text(events, "content")) == (
        "Let me see.",
        "Yes.",
    )


def test_close_only_profile_on_a_server_that_parses_reasoning():
    reads = [event(chunk(reasoning_content="Hmm")), event(chunk(content="Yes.")), DONE]
    events, _, _ = decode(reads, splitter=ThinkTagSplitter(opened=True))
    assert (text(events, "thinking"), text(events, "content")) == ("Hmm", "Yes.")


def test_events_after_done_are_not_read():
    events, error, reader = decode([DONE + event(chunk(content="late"))])
    assert reader.finished and error is None
    assert events == [Finished(done_reason="")]


BODY_EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["reasoning_content", "reasoning", "content"]),
        st.text(st.characters(codec="utf-8"), min_size=1, max_size=10),
    ),
    max_size=10,
)


@settings(deadline=None)
@given(pieces=BODY_EVENTS, pings=st.booleans(), crlf=st.booleans(), data=st.data())
def test_any_split_of_a_stream_gives_the_same_events(pieces, pings, crlf, data):
    body = b"".join(
        (b": ping\n\n" if pings else b"") + event(chunk(**{f: t})) for f, t in pieces
    )
    body += event({**chunk("stop"), "usage": USAGE}) + DONE
    if crlf:
        body = body.replace(b"\n", b"\r\n")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=30)))
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]

    events, error, _ = decode(reads, splitter=None)
    whole, _, _ = decode([body], splitter=None)

    assert error is None
    assert events[-1] == Finished(
        done_reason="stop", prompt_tokens=26, output_tokens=282
    )
    for kind in ("thinking", "content"):
        assert text(events, kind) == text(whole, kind)
    assert text(events, "thinking") == "".join(t for f, t in pieces if f != "content")


@settings(deadline=None)
@given(
    reasoning=st.text(st.sampled_from("ab <>/\n\u00e9"), max_size=15),
    answer=st.text(st.sampled_from("cd <>/\n\U0001f680"), max_size=15),
    opened=st.booleans(),
    data=st.data(),
)
def test_inline_tags_split_anywhere_in_events_and_reads(
    reasoning, answer, opened, data
):
    assume("think>" not in reasoning + answer)
    raw = ("" if opened else "<think>\n") + reasoning + "\n</think>\n\n" + answer
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=10)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    body = b"".join(event(chunk(content=p)) for p in pieces if p) + DONE
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=20)))
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]

    events, error, _ = decode(reads, splitter=ThinkTagSplitter(opened=opened))

    assert error is None
    assert text(events, "thinking") == reasoning.strip()
    assert text(events, "content") == answer.lstrip()


# --- the request ---------------------------------------------------------------


def test_openai_options_renames_and_drops():
    options = {
        "num_ctx": 8192,
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
        "min_p": 0.0,
        "seed": 7,
        "stop": ["<|im_end|>"],
        "num_predict": 512,
        "mirostat": 2,
    }
    assert openai_options(options) == {
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
        "min_p": 0.0,
        "seed": 7,
        "stop": ["<|im_end|>"],
        "max_tokens": 512,
    }


@pytest.mark.parametrize("num_predict", [-1, -2, 0, None])
def test_unlimited_num_predict_sends_no_max_tokens(num_predict):
    assert openai_options({"num_predict": num_predict}) == {}


def test_soft_switch_goes_after_the_last_user_message():
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "second"},
    ]
    assert soft_switched(messages, False)[2] == {
        "role": "user",
        "content": "second /no_think",
    }
    assert soft_switched(messages, True)[2]["content"] == "second /think"
    assert messages[2]["content"] == "second"  # the stored history is untouched
    assert soft_switched([{"role": "system", "content": "s"}], True) == [
        {"role": "system", "content": "s"}
    ]


@pytest.fixture
async def make_client():
    clients: list[httpx.AsyncClient] = []

    def make(server: Server, **control: Any) -> OpenAIClient:
        http = httpx.AsyncClient(
            transport=httpx.MockTransport(server.handler), timeout=TIMEOUT
        )
        clients.append(http)
        return OpenAIClient(
            BASE + "/v1/", http=http, thinking=ThinkingControl(**control)
        )

    yield make
    for http in clients:
        await http.aclose()


async def collect(client: OpenAIClient, **kwargs: Any) -> list[list[Event]]:
    kwargs = {"think": None, "options": {}, **kwargs}
    messages = [{"role": "user", "content": "hi"}]
    async with aclosing(client.chat(MODEL, messages, **kwargs)) as stream:
        return [batch async for batch in stream]


async def collect_until_error(
    client: OpenAIClient, **kwargs: Any
) -> tuple[list[list[Event]], UpstreamError]:
    batches: list[list[Event]] = []
    with pytest.raises(UpstreamError) as info:
        await collect_into(client, batches, **kwargs)
    return batches, info.value


async def collect_into(
    client: OpenAIClient, batches: list[list[Event]], **kwargs: Any
) -> None:
    kwargs = {"think": None, "options": {}, **kwargs}
    async with aclosing(
        client.chat(MODEL, [{"role": "user", "content": "hi"}], **kwargs)
    ) as stream:
        async for batch in stream:
            batches.append(batch)


BODIES = {
    "thinking on, template switch": (
        {},
        {"think": True},
        {"chat_template_kwargs": {"enable_thinking": True}},
        "hi",
    ),
    "thinking off, template switch": (
        {},
        {"think": False},
        {"chat_template_kwargs": {"enable_thinking": False}},
        "hi",
    ),
    "no thinking capability: nothing sent": (
        {"soft_switch": True},
        {"think": None},
        {},
        "hi",
    ),
    "soft switch only": (
        {"template_kwargs": False, "soft_switch": True},
        {"think": False},
        {},
        "hi /no_think",
    ),
    "both switches": (
        {"soft_switch": True},
        {"think": True},
        {"chat_template_kwargs": {"enable_thinking": True}},
        "hi /think",
    ),
    "options": (
        {},
        {"options": {"num_ctx": 4096, "temperature": 0.7, "num_predict": 100}},
        {"temperature": 0.7, "max_tokens": 100},
        "hi",
    ),
}


@pytest.mark.parametrize(
    ("control", "kwargs", "fields", "question"), BODIES.values(), ids=BODIES.keys()
)
async def test_request_body(make_client, control, kwargs, fields, question):
    server = stream_of(DONE)
    await collect(make_client(server, **control), **kwargs)
    request = server.requests[-1]
    assert request.url == BASE + "/v1/chat/completions"
    assert request.headers["accept-encoding"] == "identity"
    assert server.body == {
        "model": MODEL,
        "messages": [{"role": "user", "content": question}],
        "stream": True,
        "stream_options": {"include_usage": True},
        **fields,
    }


async def test_chat_yields_one_list_per_read(make_client):
    server = stream_of(
        event(chunk(reasoning_content="a")) + event(chunk(content="b")),
        event(chunk("stop")) + DONE,
    )
    batches = await collect(make_client(server))
    assert batches == [[Delta("thinking", "a"), Delta("content", "b")], [STOP]]


async def test_chat_splits_inline_tags_unless_the_profile_says_not(make_client):
    reads = (event(chunk(content="<think>a</think>b")), DONE)
    parsed = await collect(make_client(stream_of(*reads)))
    raw = await collect(make_client(stream_of(*reads), parse_tags=False))
    assert parsed[0] == [Delta("thinking", "a"), Delta("content", "b")]
    assert raw[0] == [Delta("content", "<think>a</think>b")]


async def test_close_only_tags_with_thinking_off_are_all_answer(make_client):
    reads = (event(chunk(content="Yes.")), DONE)
    batches = await collect(make_client(stream_of(*reads), opened=True), think=False)
    assert batches[0] == [Delta("content", "Yes.")]


def error_body(message: str, **fields: Any) -> bytes:
    error = {"message": message, "type": "invalid_request_error", **fields}
    return json.dumps({"error": error}).encode()


STATUS_CASES = {
    "404 model (vLLM)": (
        404,
        error_body("The model `Qwen/Qwen3-8B` does not exist.", type="NotFoundError"),
        "model_not_found",
        f'Model "{MODEL}" was not found on the model server at {BASE}',
    ),
    "400 thinking (Ollama /v1)": (
        400,
        error_body('"llama3.2" does not support thinking'),
        "thinking_unsupported",
        "Turn thinking off for this chat.",
    ),
    "400 chat_template_kwargs": (
        400,
        error_body("unknown field chat_template_kwargs"),
        "thinking_unsupported",
        "Turn thinking off for this chat.",
    ),
    "400 other": (
        400,
        b'{"error":{"message":"bad role","type":"invalid_request_error"}}',
        "bad_request",
        "(HTTP 400): bad role.",
    ),
    "503 loading (llama.cpp)": (
        503,
        b'{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}',
        "upstream_busy",
        "is busy (HTTP 503): Loading model. Try again in a moment.",
    ),
    "429 from a proxy": (429, b"Too Many Requests", "upstream_busy", "(HTTP 429)"),
    "500": (
        500,
        b'{"error":{"message":"CUDA out of memory","type":"server_error"}}',
        "upstream_error",
        "failed (HTTP 500): CUDA out of memory.",
    ),
}


@pytest.mark.parametrize(
    ("status", "content", "code", "detail"),
    STATUS_CASES.values(),
    ids=STATUS_CASES.keys(),
)
async def test_chat_status_errors(make_client, status, content, code, detail):
    batches, error = await collect_until_error(
        make_client(answer(status, content)), think=True
    )
    assert batches == []
    assert (error.code, error.status) == (code, status)
    assert detail in error.detail


async def test_ollama_v1_thinking_refusal_reads_as_the_server_said(make_client):
    server = answer(400, error_body('"llama3.2" does not support thinking'))
    _, error = await collect_until_error(make_client(server), think=True)
    assert error.detail == (
        f'The model server at {BASE} refused thinking: "llama3.2" does not '
        "support thinking. Turn thinking off for this chat."
    )


async def test_server_without_template_kwargs_points_at_the_profile(make_client):
    message = "Unrecognized request argument supplied: chat_template_kwargs"
    server = answer(400, error_body(message))
    _, error = await collect_until_error(make_client(server), think=False)
    assert error.code == "thinking_unsupported"
    assert error.detail.endswith('thinking switch to "Nothing".')


async def test_400_about_thinking_without_thinking_sent_is_a_bad_request(make_client):
    server = answer(400, b'{"error":{"message":"thinking budget must be positive"}}')
    _, error = await collect_until_error(make_client(server), think=None)
    assert error.code == "bad_request"


TRANSPORT_CASES = {
    "refused": (
        httpx.ConnectError("All connection attempts failed"),
        "upstream_unreachable",
        f"The model server at {BASE} did not answer",
    ),
    "connect timeout": (
        httpx.ConnectTimeout("timed out"),
        "upstream_timeout",
        "did not accept a connection within 5 s.",
    ),
    "no first byte": (
        httpx.ReadTimeout("timed out"),
        "upstream_timeout",
        "sent nothing for 300 s",
    ),
}


@pytest.mark.parametrize(
    ("exc", "code", "detail"), TRANSPORT_CASES.values(), ids=TRANSPORT_CASES.keys()
)
async def test_chat_transport_errors(make_client, exc, code, detail):
    batches, error = await collect_until_error(make_client(raising(exc)))
    assert batches == []
    assert error.code == code
    assert detail in error.detail


@pytest.mark.parametrize(
    ("exc", "code", "detail"),
    [
        (httpx.ReadError("reset"), "stream_cut", "broke mid-answer: reset."),
        (httpx.ReadTimeout("t"), "upstream_timeout", "stopped sending for 300 s"),
    ],
)
async def test_chat_errors_mid_stream_keep_what_came(make_client, exc, code, detail):
    server = stream_of(event(chunk(content="partial")), then=exc)
    batches, error = await collect_until_error(make_client(server))
    assert batches == [[Delta("content", "partial")]]
    assert (error.code, detail in error.detail) == (code, True)


async def test_error_event_mid_stream_keeps_the_text_before_it(make_client):
    error_event = event({"error": {"message": "boom", "code": 500}})
    server = stream_of(event(chunk(content="partial")) + error_event + DONE)
    batches, error = await collect_until_error(make_client(server))
    assert batches == [[Delta("content", "partial")]]
    assert error.code == "upstream_error" and "boom." in error.detail


async def test_breaking_out_closes_the_response(make_client):
    body = Body(event(chunk(content="a")), hang=True)
    server = Server(lambda request: httpx.Response(200, stream=body))
    async with aclosing(
        make_client(server).chat(MODEL, [], think=None, options={})
    ) as stream:
        async for _ in stream:
            break
    assert body.closed


def test_base_url_with_or_without_v1():
    http = httpx.AsyncClient()
    assert OpenAIClient("http://h:1/v1", http=http).base_url == "http://h:1"
    assert OpenAIClient("http://h:1/", http=http).base_url == "http://h:1"


async def test_models_lists_the_served_models(make_client):
    body = b'{"object":"list","data":[{"id":"a","object":"model"},7]}'
    server = answer(200, body)
    assert await make_client(server).models() == [{"id": "a", "object": "model"}]
    assert server.requests[-1].url == BASE + "/v1/models"


@pytest.mark.parametrize(
    ("status", "content", "code", "detail"),
    [
        (404, b"404 page not found", "upstream_error", "an OpenAI-compatible server"),
        (200, b"<html></html>", "malformed", "an OpenAI-compatible model list"),
        (200, b'{"data": 3}', "malformed", "an OpenAI-compatible model list"),
        (503, b"Loading model", "upstream_busy", "Loading model."),
    ],
)
async def test_models_errors(make_client, status, content, code, detail):
    with pytest.raises(UpstreamError) as info:
        await make_client(answer(status, content)).models()
    assert info.value.code == code and detail in info.value.detail


async def test_models_unreachable(make_client):
    server = raising(httpx.ConnectError("All connection attempts failed"))
    with pytest.raises(UpstreamError) as info:
        await make_client(server).models()
    assert info.value.code == "upstream_unreachable"


def test_images_become_content_parts_with_data_urls():
    from chat.upstream.openai import with_content_parts

    png, jpeg = "iVBORw0KGgo=", "/9j/4AAQ"
    message = {"role": "user", "content": "What is this?", "images": [png, jpeg]}
    assert with_content_parts(message) == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
            {
                "type": "image_url",
                "image_url": {"url": f"data:image/jpeg;base64,{jpeg}"},
            },
        ],
    }
    plain = {"role": "user", "content": "hi"}
    assert with_content_parts(plain) is plain
