"""`chat.api.answers.ApiAnswer` as the response reads it: `wait` returns for
each piece of news, and after a silence, with one timer for a run of waits
(a streamed response waits once per token)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from chat.api import endpoint
from chat.api.answers import ApiAnswer
from chat.live.protocol import frames

# A wait that should end long before this fails instead of hanging the suite.
BOUND = 10.0


def sink() -> ApiAnswer:
    answer = SimpleNamespace(conversation_id=-1, pk=-1, prompt_tokens_estimate=0)
    turn = SimpleNamespace(
        answer=answer, profile=SimpleNamespace(tag="m"), client_tools=None
    )
    return ApiAnswer(turn)


def news(answer: ApiAnswer, delta: str = "w") -> None:
    asyncio.get_running_loop().create_task(
        answer.send_frame(frames.delta("content", -1, delta))
    )


def counting_timers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The timers the running loop is asked for from now on (`asyncio.timeout`
    and `call_later` go through `call_at` too)."""
    loop = asyncio.get_running_loop()
    armed: list[Any] = []
    call_at = loop.call_at

    def counted(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        armed.append(callback)
        return call_at(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counted)
    return armed


async def test_news_before_the_wait_returns_at_once_with_no_timer(monkeypatch):
    answer = sink()
    armed = counting_timers(monkeypatch)
    await answer.send_frame(frames.delta("content", -1, "w"))
    assert await answer.wait(60) is True
    assert answer.take() == ("", "w")
    assert armed == []


async def test_a_silence_ends_the_wait_with_false():
    answer = sink()
    assert await asyncio.wait_for(answer.wait(0.05), BOUND) is False
    assert not answer.has_text


async def test_a_run_of_waits_with_news_arms_one_timer(monkeypatch):
    answer = sink()
    armed = counting_timers(monkeypatch)
    for n in range(50):
        waiting = asyncio.ensure_future(answer.wait(60))
        await asyncio.sleep(0)  # it waits
        assert not waiting.done()
        await answer.send_frame(frames.delta("content", -1, f"w{n} "))
        assert await waiting is True
    assert answer.take()[1] == "".join(f"w{n} " for n in range(50))
    assert len(armed) == 1
    answer.close()


async def test_the_silence_counts_from_the_last_wait():
    """The timer armed by the first wait rings at its time, finds that a later
    wait moved the time on, and is armed again: the silent wait lasts its own
    seconds, not what was left of the first's."""
    answer = sink()
    loop = asyncio.get_running_loop()
    news(answer)
    assert await answer.wait(0.3) is True  # arms the timer for 0.3 s from now
    await asyncio.sleep(0.2)
    began = loop.time()
    assert await asyncio.wait_for(answer.wait(0.3), BOUND) is False
    # uvloop's and asyncio's timers may ring up to a millisecond early.
    assert loop.time() - began >= 0.3 - 0.002


async def test_a_shorter_wait_than_the_last_is_not_held_by_its_timer():
    answer = sink()
    news(answer)
    assert await answer.wait(3600) is True  # a timer an hour away
    assert await asyncio.wait_for(answer.wait(0.05), BOUND) is False


async def test_news_during_a_wait_without_seconds():
    answer = sink()
    news(answer)
    assert await asyncio.wait_for(answer.wait(), BOUND) is True


async def test_closing_cancels_the_timer(monkeypatch):
    answer = sink()
    news(answer)
    assert await answer.wait(3600) is True
    timer = answer._silence
    assert timer is not None
    answer.close()
    assert timer.cancelled()


async def test_a_silent_stream_gets_keepalives_and_then_the_news(monkeypatch):
    monkeypatch.setattr(endpoint, "KEEPALIVE_SECONDS", 0.05)
    answer = sink()
    updates = endpoint.updates(answer, b": k\n\n")
    assert await anext(updates) is None  # what arrived before it opened
    assert await asyncio.wait_for(anext(updates), BOUND) == b": k\n\n"
    assert await asyncio.wait_for(anext(updates), BOUND) == b": k\n\n"
    news(answer, "hello")
    assert await asyncio.wait_for(anext(updates), BOUND) is None
    assert answer.take() == ("", "hello")
    await answer.send_frame({"type": "done", "message_id": -1, "stats": {}})
    with pytest.raises(StopAsyncIteration):  # finished: the response writes its end
        await asyncio.wait_for(anext(updates), BOUND)
