"""Busy servers are asked again before the first token, never after it."""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import pytest

from chat.upstream import Delta, Event, UpstreamError
from chat.upstream.pool import aclose_all, ollama_client, openai_client
from chat.upstream.retry import retry_after, retry_busy

BUSY = UpstreamError("upstream_busy", "busy", status=503)


class Attempts:
    """Stream starters that fail or yield as told, one script per attempt."""

    def __init__(self, *scripts: list[Any]) -> None:
        self.scripts = list(scripts)
        self.started = 0
        self.closed = 0

    def start(self) -> AsyncGenerator[list[Event], None]:
        script = self.scripts[self.started]
        self.started += 1
        return self._run(script)

    async def _run(self, script: list[Any]) -> AsyncGenerator[list[Event], None]:
        try:
            for step in script:
                if isinstance(step, Exception):
                    raise step
                yield step
        finally:
            self.closed += 1


async def run(attempts: Attempts, delays: tuple[float, ...]) -> list[list[Event]]:
    async with aclosing(retry_busy(attempts.start, delays)) as stream:
        return [batch async for batch in stream]


A = [Delta("content", "a")]


async def test_busy_before_the_first_token_is_tried_again():
    attempts = Attempts([BUSY], [BUSY], [A])
    assert await run(attempts, (0, 0, 0)) == [A]
    assert attempts.started == 3 and attempts.closed == 3


async def test_busy_every_time_raises_the_last_error():
    attempts = Attempts([BUSY], [BUSY], [BUSY])
    with pytest.raises(UpstreamError) as info:
        await run(attempts, (0, 0))
    assert info.value is BUSY
    assert attempts.started == 3


async def test_no_retry_after_a_token():
    attempts = Attempts([A, BUSY], [A])
    batches: list[list[Event]] = []
    with pytest.raises(UpstreamError):
        async with aclosing(retry_busy(attempts.start, (0,))) as stream:
            async for batch in stream:
                batches.append(batch)
    assert batches == [A] and attempts.started == 1


@pytest.mark.parametrize(
    "error",
    [
        UpstreamError("model_not_found", "no", status=404),
        UpstreamError("upstream_unreachable", "down"),
        UpstreamError("upstream_error", "500", status=500),
    ],
)
async def test_other_errors_are_not_retried(error):
    attempts = Attempts([error], [A])
    with pytest.raises(UpstreamError) as info:
        await run(attempts, (0,))
    assert info.value is error and attempts.started == 1


async def test_closing_early_closes_the_attempt():
    attempts = Attempts([A, A])
    async with aclosing(retry_busy(attempts.start, ())) as stream:
        async for _ in stream:
            break
    assert attempts.closed == 1


async def test_retry_after_is_obeyed(monkeypatch):
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("chat.upstream.retry.asyncio.sleep", sleep)
    slow = UpstreamError("upstream_busy", "busy", status=429)
    slow.retry_after = 3.0
    huge = UpstreamError("upstream_busy", "busy", status=429)
    huge.retry_after = 3600.0
    attempts = Attempts([slow], [BUSY], [huge], [A])
    assert await run(attempts, (0.25, 0.5, 1.0)) == [A]
    assert slept == [3.0, 0.5, 10.0]


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
    yield
    await aclose_all()


def make(backend: str, url: str) -> Any:
    return ollama_client(url) if backend == "ollama" else openai_client(url)


async def chat(client: Any) -> list[Event]:
    messages = [{"role": "user", "content": "hi"}]
    stream = client.chat("llama-demo:3b", messages, think=None, options={})
    async with aclosing(stream) as batches:
        return [event async for batch in batches for event in batch]


@pytest.mark.parametrize("backend", ["ollama", "openai"])
@pytest.mark.parametrize("status", [503, 429])
async def test_busy_simulator_is_asked_again(simulator, pool, backend, status):
    simulator.config.status, simulator.config.fault_requests = status, 2
    events = await chat(make(backend, simulator.url))
    assert [e.status for e in simulator.log] == [status, status, 200]
    assert "".join(e.text for e in events if isinstance(e, Delta))


@pytest.mark.parametrize("backend", ["ollama", "openai"])
async def test_busy_simulator_every_time_is_reported(simulator, pool, backend):
    simulator.config.status = 503
    with pytest.raises(UpstreamError) as info:
        await chat(make(backend, simulator.url))
    assert info.value.code == "upstream_busy"
    assert "Try again in a moment." in info.value.detail
    assert len(simulator.log) == 4  # the first try and three more


@pytest.mark.parametrize("backend", ["ollama", "openai"])
async def test_a_cut_after_tokens_is_not_retried(simulator, pool, backend):
    simulator.config.cut_after = 3
    with pytest.raises(UpstreamError) as info:
        await chat(make(backend, simulator.url))
    assert info.value.code == "stream_cut"
    assert len(simulator.log) == 1


async def test_unreachable_is_not_retried(pool):
    with pytest.raises(UpstreamError) as info:
        await chat(make("openai", "http://127.0.0.1:9"))
    assert info.value.code == "upstream_unreachable"
