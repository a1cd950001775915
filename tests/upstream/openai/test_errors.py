"""The OpenAI client's errors: the server's statuses and what they mean for
thinking, the transport's failures before and during the answer."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from chat.upstream import Delta
from tests.upstream.fake_servers import answer, raising, stream_of
from tests.upstream.openai.answering import (
    BASE,
    DONE,
    MODEL,
    chunk,
    collect_until_error,
    event,
)


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
