"""A turn's slot while its tools run, through the owner's socket: kept while
they run less than TOOL_SLOT_GRACE_MS (no trip to the database between the
result and the next model call), lent to the next in line once they run past
it; and the audit log, written once the next model call is out or the turn
ends (`chat.live.engine.turn.slots.lend`, `chat.live.engine.turn.tools`)."""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async

from chat.models import AuditEvent
from tests.live.engine.admission.queueing import on_database
from tests.support.communicators import connect, frames_until, send
from tests.support.waiting import until

pytestmark = on_database


def types(frames: list[dict]) -> list[str]:
    return [f["type"] for f in frames]


def askers(simulator) -> list[str]:
    """Whose question each model request answered, in order."""
    return [
        next(m["content"] for m in entry.body["messages"] if m["role"] == "user")
        for entry in simulator.asked
    ]


async def test_within_the_grace_the_turn_keeps_its_slot(
    alice, bob, conversation, simulator, probe, limits, conversations, settings
):
    settings.TOOL_SLOT_GRACE_MS = 60_000
    await sync_to_async(limits)(0, 1)
    [theirs] = await sync_to_async(conversations)(bob)
    mine = await connect(alice, conversation)
    await send(mine, "Use slow now")
    await asyncio.wait_for(probe.started.wait(), 10)
    other = await connect(bob, theirs)
    await send(other, "Hello there")
    await frames_until(other, "queued")  # the slot is still the turn's
    probe.gate.set()
    rest = await frames_until(mine, "done")
    answered = await frames_until(other, "done")
    await mine.disconnect()
    await other.disconnect()
    assert rest[-1]["status"] == "done" and answered[-1]["status"] == "done"
    # The turn's next model call went before the answer that waited.
    assert askers(simulator) == ["Use slow now", "Use slow now", "Hello there"]


async def test_past_the_grace_the_slot_is_lent_while_the_tool_runs(
    alice, bob, conversation, simulator, probe, limits, conversations, settings
):
    settings.TOOL_SLOT_GRACE_MS = 300
    await sync_to_async(limits)(0, 1)
    [theirs] = await sync_to_async(conversations)(bob)
    mine = await connect(alice, conversation)
    await send(mine, "Use slow now")
    await asyncio.wait_for(probe.started.wait(), 10)
    other = await connect(bob, theirs)
    await send(other, "Hello there")
    answered = await frames_until(other, "done")
    assert answered[-1]["status"] == "done"
    assert not probe.gate.is_set()  # answered while the tool still ran
    probe.gate.set()
    rest = await frames_until(mine, "done")
    await mine.disconnect()
    await other.disconnect()
    assert rest[-1]["status"] == "done" and "round" in types(rest)
    assert askers(simulator) == ["Use slow now", "Hello there", "Use slow now"]


async def test_a_call_stopped_mid_run_is_audited_when_the_turn_ends(
    alice, conversation, simulator, probe
):
    socket = await connect(alice, conversation)
    await send(socket, "Use slow now")
    await asyncio.wait_for(probe.started.wait(), 10)
    await socket.send_json_to({"type": "stop"})
    done = (await frames_until(socket, "done"))[-1]
    await socket.disconnect()
    assert done["status"] == "stopped"
    audited = await until(
        lambda: AuditEvent.objects.filter(kind="tool_call").first(), "no audit"
    )
    assert audited.detail["outcome"] == "stopped"
    assert audited.detail["message_id"] == done["message_id"]
