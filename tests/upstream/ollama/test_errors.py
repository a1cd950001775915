"""The Ollama client's errors: the server's statuses, the transport's failures
before and during the answer, the error itself."""

from __future__ import annotations

import pickle
import socket

import httpx
import pytest

from chat.upstream import Delta, UpstreamError
from chat.upstream.events import error_for_transport
from tests.upstream.fake_servers import answer, raising, stream_of
from tests.upstream.ollama.answering import (
    BASE,
    chunk,
    collect_until_error,
    line,
    refused,
)

STATUS_CASES = {
    "404 model": (
        404,
        b'{"error":"model \\"qwen3:8b\\" not found, try pulling it first"}',
        "model_not_found",
        'Model "qwen3:8b" was not found on the model server at '
        f'{BASE}: model "qwen3:8b" not found, try pulling it first.',
    ),
    "404 text": (404, b"404 page not found", "model_not_found", "404 page not found."),
    "400 thinking": (
        400,
        b'{"error":"\\"llama3.2\\" does not support thinking"}',
        "thinking_unsupported",
        f'The model server at {BASE} refused thinking: "llama3.2" does not '
        "support thinking. Turn thinking off for this chat.",
    ),
    "400 other": (
        400,
        b'{"error":"invalid think value: \\"x\\""}',
        "bad_request",
        f'{BASE} rejected the request (HTTP 400): invalid think value: "x".',
    ),
    "503 busy": (
        503,
        b'{"error":"server busy, please try again.  '
        b'maximum pending requests exceeded"}',
        "upstream_busy",
        f"{BASE} is busy (HTTP 503): server busy, please try again. maximum "
        "pending requests exceeded. Try again in a moment.",
    ),
    "429 text": (429, b"Too many requests\n", "upstream_busy", "(HTTP 429): Too many"),
    "500 runner": (
        500,
        b'{"error":"model runner has unexpectedly stopped"}',
        "upstream_error",
        f"{BASE} failed (HTTP 500): model runner has unexpectedly stopped.",
    ),
    "502 html": (
        502,
        b"<html>\n<body>Bad   Gateway</body>\n</html>",
        "upstream_error",
        "(HTTP 502): <html> <body>Bad Gateway</body> </html>.",
    ),
    "500 empty body": (
        500,
        b"",
        "upstream_error",
        "(HTTP 500): Internal Server Error.",
    ),
    "openai-shaped error": (
        400,
        b'{"error":{"message":"bad role","type":"invalid_request_error"}}',
        "bad_request",
        "(HTTP 400): bad role.",
    ),
    "unexpected 302": (302, b"", "upstream_error", "unexpected HTTP 302: Found."),
}


@pytest.mark.parametrize(
    ("status", "content", "code", "detail"),
    STATUS_CASES.values(),
    ids=STATUS_CASES.keys(),
)
async def test_chat_status_errors(make_client, status, content, code, detail):
    batches, error = await collect_until_error(make_client(answer(status, content)))
    assert batches == []
    assert (error.code, error.status) == (code, status)
    assert detail in error.detail


def test_long_server_message_is_shortened():
    from chat.upstream.events import server_message

    message = server_message(b"x" * 10_000, "Bad Gateway")
    assert len(message) == 300
    assert message.endswith("\u2026")


def not_resolved() -> httpx.ConnectError:
    error = httpx.ConnectError("[Errno -2] Name or service not known")
    error.__cause__ = socket.gaierror(-2, "Name or service not known")
    return error


TRANSPORT_CASES = {
    "refused": (
        refused(),
        "upstream_unreachable",
        f"The model server at {BASE} did not answer: connection refused.",
    ),
    "dns": (not_resolved(), "upstream_unreachable", "host name could not be resolved"),
    "other connect error": (
        httpx.ConnectError("[Errno 113] No route to host"),
        "upstream_unreachable",
        "did not answer: [Errno 113] No route to host.",
    ),
    "connect timeout": (
        httpx.ConnectTimeout("timed out"),
        "upstream_timeout",
        f"The model server at {BASE} did not accept a connection within 5 s.",
    ),
    "no first byte": (
        httpx.ReadTimeout("timed out"),
        "upstream_timeout",
        "sent nothing for 300 s; the model may still be loading",
    ),
    "pool timeout": (httpx.PoolTimeout("t"), "upstream_busy", "Too many requests"),
    "write timeout": (httpx.WriteTimeout("t"), "upstream_timeout", "within 5 s."),
    "closed without answer": (
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        "upstream_unreachable",
        "closed the connection without answering: server disconnected",
    ),
    "bad url": (
        httpx.UnsupportedProtocol("Request URL is missing an 'http://' protocol."),
        "upstream_unreachable",
        "is not a valid model server address",
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
    assert error.__cause__ is exc


@pytest.mark.parametrize(
    ("exc", "code", "detail"),
    [
        (httpx.ReadError("reset"), "stream_cut", "broke mid-answer: reset."),
        (
            httpx.RemoteProtocolError("peer closed connection"),
            "stream_cut",
            "broke mid-answer: peer closed connection.",
        ),
        (httpx.ReadTimeout("t"), "upstream_timeout", "stopped sending for 300 s"),
        (httpx.DecodingError("bad gzip"), "malformed", "could not be decoded"),
    ],
)
async def test_chat_errors_mid_stream_keep_what_came(make_client, exc, code, detail):
    server = stream_of(line(chunk("partial")), then=exc)
    batches, error = await collect_until_error(make_client(server))
    assert batches == [[Delta("content", "partial")]]
    assert error.code == code
    assert detail in error.detail


async def test_read_timeout_after_headers_before_body_means_no_first_byte(make_client):
    server = stream_of(then=httpx.ReadTimeout("t"))
    _, error = await collect_until_error(make_client(server))
    assert error.code == "upstream_timeout"
    assert "sent nothing for 300 s" in error.detail


async def test_chat_error_line_mid_stream(make_client):
    server = stream_of(
        line(chunk("a")),
        line(chunk("b")) + line({"error": "model runner has unexpectedly stopped"}),
        line(chunk("never")),
    )
    batches, error = await collect_until_error(make_client(server))
    # Text in the same read as the error line is still delivered.
    assert batches == [[Delta("content", "a")], [Delta("content", "b")]]
    assert error.code == "upstream_error"
    assert "model runner has unexpectedly stopped." in error.detail


def test_error_for_transport_without_timeouts():
    error = error_for_transport(
        httpx.ReadTimeout("t"),
        base_url=BASE,
        stage="streaming",
        timeout=httpx.Timeout(None),
    )
    assert "stopped sending for the time limit" in error.detail


def test_upstream_error_pickles():
    error = pickle.loads(
        pickle.dumps(UpstreamError("upstream_busy", "Busy.", status=503))
    )
    assert (error.code, error.detail, error.status) == ("upstream_busy", "Busy.", 503)


def test_upstream_error_fields():
    error = UpstreamError("upstream_busy", "Busy.", status=503)
    assert (error.code, error.detail, error.status, str(error)) == (
        "upstream_busy",
        "Busy.",
        503,
        "Busy.",
    )
