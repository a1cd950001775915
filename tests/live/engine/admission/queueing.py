"""Answers that run and answers that wait in line, for the admission tests: the
simulator's answers slowed, a socket whose answer streams or is queued, one held
until the test ends it, the model server's request for a question."""

from __future__ import annotations

import pytest

from tests.support.communicators import connect, frames_until, send

on_database = pytest.mark.django_db(transaction=True)


def slow_answers(simulator, tps: float = 40, tokens: int = 30) -> None:
    simulator.config.tps = tps
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = tokens


async def running(user, conversation, content: str = "Hello there"):
    """A socket whose answer has started streaming: (socket, frames so far)."""
    communicator = await connect(user, conversation)
    await send(communicator, content)
    return communicator, await frames_until(communicator, "content")


async def queued(user, conversation, content: str = "Hello there"):
    """A socket whose answer waits in line: (socket, frames up to `queued`)."""
    communicator = await connect(user, conversation)
    await send(communicator, content)
    return communicator, await frames_until(communicator, "queued")


# An answer that outlasts any setup, however slow the machine: a test that
# needs the queue to stay as it set it up ends it itself (`end_running`).
HELD_TOKENS = 100_000


async def end_running(communicator, simulator, tokens: int = 30) -> None:
    """Stop the socket's running answer; the answers after it are short."""
    simulator.config.answer_tokens = tokens
    await communicator.send_json_to({"type": "stop"})


def request_of(simulator, content: str):
    return next(
        e for e in simulator.log if e.body["messages"][-1]["content"] == content
    )
