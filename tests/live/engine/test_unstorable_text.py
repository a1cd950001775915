"""Text the database cannot store (NUL, lone surrogates) never costs an answer.

The model server's text is cleaned where it enters (`chat.upstream.events
.cleaned`); should unstorable text reach the runner anyway, the checkpoint of the
other answers goes on (`chat.live.engine.checkpoints._checkpoint`) and the answer whose
final save fails still ends: its viewers are told, its conversation and slot are
freed.
"""

from __future__ import annotations

import asyncio

import pytest
from django.db import connection

from chat.live.engine.runner import runner
from chat.models import Conversation, Message
from tests.support.communicators import connect, frames_until, send, text_of

pytestmark = pytest.mark.django_db(transaction=True)

WAIT = 60  # seconds: a bound for a loaded machine, not a budget


async def poll(condition, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT
    while not await condition():
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.05)


async def test_nul_and_lone_surrogates_from_the_model_are_stored_as_replacements(
    alice, conversation, simulator
):
    simulator.config.thinking_text = "Think\x00ing about it."
    simulator.config.answer_text = "Before \x00 middle \ud800 after \udfff end."
    communicator = await connect(alice, conversation)
    await send(communicator)
    received = await frames_until(communicator, "done", timeout=WAIT)
    await communicator.disconnect()
    expected = "Before \ufffd middle \ufffd after \ufffd end."
    assert text_of(received, "content") == expected
    assert received[-1]["status"] == "done"
    assert received[-1]["stats"]["replaced_chars"] == 4
    answer = await conversation.messages.filter(role="assistant").alast()
    assert answer.status == Message.Status.DONE
    assert answer.content == expected
    assert answer.thinking == "Think\ufffding about it."
    assert answer.replaced_chars == 4


def _uses_postgresql() -> bool:
    return connection.vendor == "postgresql"


@pytest.mark.parametrize("unstorable", ["\x00", "\ud800"])
async def test_an_answer_the_database_refuses_neither_stops_the_others_nor_dies_unseen(
    alice, demo_profile, simulator, unstorable
):
    if not _uses_postgresql():
        pytest.skip("SQLite stores NUL and refuses nothing here")
    simulator.config.tps = 20
    simulator.config.answer_tokens = 2000
    poisoned = await Conversation.objects.acreate(
        owner=alice, model_profile=demo_profile
    )
    other = await Conversation.objects.acreate(owner=alice, model_profile=demo_profile)
    first = await connect(alice, poisoned)
    await send(first)
    await frames_until(first, "content", timeout=WAIT)
    # Text no database takes reaches the runner (as if the model server's had
    # not been cleaned): every checkpoint from here on carries it.
    generation = runner.generation(poisoned.pk)
    assert generation is not None
    generation.content.append(unstorable)
    generation.content_len += 1

    second = await connect(alice, other)
    await send(second)
    await frames_until(second, "content", timeout=WAIT)
    other_answer = await other.messages.filter(role="assistant").alast()

    async def other_checkpointed() -> bool:
        row = await Message.objects.aget(pk=other_answer.pk)
        return row.status == Message.Status.STREAMING and row.content != ""

    await poll(other_checkpointed, "the other answer's checkpoints stopped")

    runner.stop(poisoned.pk)
    received = await frames_until(first, "done", timeout=WAIT)
    errors = [f for f in received if f["type"] == "error"]
    assert errors and errors[-1]["code"] == "save_failed", received
    assert received[-1]["status"] == "error"

    async def freed() -> bool:
        return not runner.is_busy(poisoned.pk)

    await poll(freed, "the conversation stayed busy")
    row = await Message.objects.aget(pk=generation.message_id)
    assert row.status == Message.Status.ERROR and row.error_code == "save_failed"
    # Its slot and claim are free: the next question is answered.
    simulator.config.answer_tokens = 5
    simulator.config.tps = 0
    await send(first, "Again")
    received = await frames_until(first, "done", timeout=WAIT)
    assert received[-1]["status"] == "done"
    runner.stop(other.pk)
    assert (await frames_until(second, "done", timeout=WAIT))[-1]["status"] in {
        "stopped",
        "done",
    }
    await first.disconnect()
    await second.disconnect()
