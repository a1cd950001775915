"""Busy servers are asked again before the body starts, never after it."""

from __future__ import annotations

import email.utils
import json
import time
from contextlib import aclosing
from typing import Any

import httpx
import pytest

from chat.upstream import ClientPool, Delta, Event, UpstreamError
from chat.upstream.retry import busy_retried, json_body, retry_after
from tests.upstream.fake_servers import Body

URL = "http://gpu.test:8000/v1/chat/completions"


class Answers:
    """A server answering each request with the next of `statuses` (200: a
    streamed body), recording the requests and the bodies closed."""

    def __init__(self, *statuses: int, retry_after: str | None = None) -> None:
        self.statuses = list(statuses)
        self.retry_after = retry_after
        self.requests: list[httpx.Request] = []
        self.bodies: list[Body] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        status = self.statuses[len(self.requests) - 1]
        body = Body(b"data: [DONE]\n\n")
        self.bodies.append(body)
        headers = {"Retry-After": self.retry_after} if self.retry_after else {}
        return httpx.Response(status, stream=body, headers=headers)


async def status_error(response: httpx.Response) -> UpstreamError:
    from chat.upstream.events import error_for_status

    error = error_for_status(
        response.status_code, "no", base_url="b", path="/p", model=None
    )
    error.retry_after = retry_after(response.headers.get("Retry-After"))
    return error


async def open_once(answers: Answers, delays: tuple[float, ...]) -> bytes:
    transport = httpx.MockTransport(answers.handler)
    async with httpx.AsyncClient(transport=transport) as http:
        opened = busy_retried(http, URL, {"a": 1}, {}, status_error, delays)
        async with opened as response:
            assert response.status_code == 200
            return b"".join([data async for data in response.aiter_bytes()])


@pytest.mark.parametrize("busy", [503, 429])
async def test_busy_before_the_body_is_tried_again(busy):
    answers = Answers(busy, busy, 200)
    assert await open_once(answers, (0, 0, 0)) == b"data: [DONE]\n\n"
    assert len(answers.requests) == 3
    assert all(json.loads(r.content) == {"a": 1} for r in answers.requests)
    assert all(body.closed for body in answers.bodies)


async def test_the_request_is_json_as_httpx_writes_it():
    body = {
        "model": "qwen3:8b",
        "messages": [{"role": "user", "content": 'Grüße, 你好 "quoted"\n\u2028'}],
        "options": {"temperature": 0.7, "seed": -(2**63 - 1), "stop": ["</s>"]},
        "stream": True,
        "keep_alive": None,
    }
    answers = Answers(200)
    transport = httpx.MockTransport(answers.handler)
    headers = {"Accept": "x"}
    async with (
        httpx.AsyncClient(transport=transport) as http,
        busy_retried(http, URL, body, headers, status_error, ()),
    ):
        pass
    [request] = answers.requests
    assert request.content == httpx.Request("POST", URL, json=body).content
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Content-Length"] == str(len(request.content))
    assert request.headers["Accept"] == "x"


def test_what_orjson_refuses_is_written_or_refused_as_httpx_did():
    big = {"options": {"seed": 2**64}, "content": "é"}
    assert json_body(big) == httpx.Request("POST", URL, json=big).content
    lone_surrogate = {"content": "\ud800"}
    with pytest.raises(UnicodeEncodeError):
        httpx.Request("POST", URL, json=lone_surrogate)
    with pytest.raises(UnicodeEncodeError):
        json_body(lone_surrogate)


async def test_busy_every_time_raises_the_last_error():
    answers = Answers(503, 503, 503)
    with pytest.raises(UpstreamError) as info:
        await open_once(answers, (0, 0))
    assert (info.value.code, info.value.status) == ("upstream_busy", 503)
    assert len(answers.requests) == 3


@pytest.mark.parametrize(
    ("status", "code"),
    [(404, "upstream_error"), (400, "bad_request"), (500, "upstream_error")],
)
async def test_other_statuses_are_not_retried(status, code):
    answers = Answers(status, 200)
    with pytest.raises(UpstreamError) as info:
        await open_once(answers, (0,))
    assert info.value.code == code and len(answers.requests) == 1
    assert answers.bodies[0].closed


async def test_retry_after_is_obeyed(monkeypatch):
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("chat.upstream.retry.asyncio.sleep", sleep)
    await open_once(Answers(429, 429, 200, retry_after="3"), (0.25, 5.0))
    await open_once(Answers(429, 200, retry_after="3600"), (0.25,))
    assert slept == [3.0, 5.0, 10.0]


async def test_transport_errors_are_left_to_the_client():
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    transport = httpx.MockTransport(refuse)
    async with httpx.AsyncClient(transport=transport) as http:
        with pytest.raises(httpx.ConnectError):
            async with busy_retried(http, URL, {}, {}, status_error, (0,)):
                pass


def test_default_pauses_come_from_the_settings(settings):
    from chat.upstream.retry import retry_delays

    settings.UPSTREAM_BUSY_RETRY_DELAYS = [0.1, 0.2]
    assert retry_delays() == (0.1, 0.2)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [(None, None), ("", None), ("7", 7.0), (" 2 ", 2.0), ("soon", None)],
)
def test_retry_after_header(header, seconds):
    assert retry_after(header) == seconds


def test_retry_after_as_a_date():
    when = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 55 <= (retry_after(when) or 0) <= 61
    past = email.utils.formatdate(time.time() - 60, usegmt=True)
    assert retry_after(past) == 0.0


# --- against the simulator's status fault ---------------------------------------


@pytest.fixture
async def pool():
    clients = ClientPool()
    yield clients
    await clients.aclose()


def make(pool: ClientPool, backend: str, url: str) -> Any:
    return pool.ollama(url) if backend == "ollama" else pool.openai(url)


async def chat(client: Any) -> list[Event]:
    messages = [{"role": "user", "content": "hi"}]
    stream = client.chat("llama-demo:3b", messages, think=None, options={})
    async with aclosing(stream) as batches:
        return [event async for batch in batches for event in batch]


@pytest.mark.parametrize("backend", ["ollama", "openai"])
@pytest.mark.parametrize("status", [503, 429])
async def test_busy_simulator_is_asked_again(simulator, pool, backend, status):
    simulator.config.status, simulator.config.fault_requests = status, 2
    events = await chat(make(pool, backend, simulator.url))
    assert [e.status for e in simulator.log] == [status, status, 200]
    assert "".join(e.text for e in events if isinstance(e, Delta))


@pytest.mark.parametrize("backend", ["ollama", "openai"])
async def test_busy_simulator_every_time_is_reported(simulator, pool, backend):
    simulator.config.status = 503
    with pytest.raises(UpstreamError) as info:
        await chat(make(pool, backend, simulator.url))
    assert info.value.code == "upstream_busy"
    assert "Try again in a moment." in info.value.detail
    assert len(simulator.log) == 4  # the first try and three more


@pytest.mark.parametrize("backend", ["ollama", "openai"])
async def test_a_cut_after_tokens_is_not_retried(simulator, pool, backend):
    simulator.config.cut_after = 3
    with pytest.raises(UpstreamError) as info:
        await chat(make(pool, backend, simulator.url))
    assert info.value.code == "stream_cut"
    assert len(simulator.log) == 1


async def test_unreachable_is_not_retried(pool):
    with pytest.raises(UpstreamError) as info:
        await chat(make(pool, "openai", "http://127.0.0.1:9"))
    assert info.value.code == "upstream_unreachable"
