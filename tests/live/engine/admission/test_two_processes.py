"""Admission across two real Daphne processes sharing the database and Redis: the
model's slots are shared, and a killed process gives its slot back."""

from __future__ import annotations

import signal

import pytest
from asgiref.sync import sync_to_async

from chat.models import Message
from tests.live.engine.admission.queueing import on_database, request_of, slow_answers
from tests.support.services.daphnes import frames_until as socket_frames_until
from tests.support.services.daphnes import open_socket
from tests.support.services.daphnes import send as socket_send


@pytest.fixture
def one_slot_two_processes(daphnes, alice, bob, limits, conversations, session_cookie):
    """One model slot; Alice's socket on process 0, Bob's on process 1."""

    async def open_both():
        await sync_to_async(limits)(0, 1)
        sockets = []
        for daphne, user in ((daphnes[0], alice), (daphnes[1], bob)):
            [conversation] = await sync_to_async(conversations)(user)
            cookie = await sync_to_async(session_cookie)(user)
            sockets.append(await open_socket(daphne, conversation, cookie))
        return sockets

    return open_both


async def first_runs_second_waits(alices, bobs, first: str, second: str):
    """Alice's answer runs; Bob's waits in line: (Alice's, Bob's frames)."""
    await socket_send(alices, first)
    started = await socket_frames_until(alices, "content")
    await socket_send(bobs, second)
    waited = await socket_frames_until(bobs, "queued")
    assert waited[-1]["position"] == 1
    return started, waited


@on_database
async def test_two_processes_share_the_model_slots(one_slot_two_processes, simulator):
    alices, bobs = await one_slot_two_processes()
    slow_answers(simulator)
    await first_runs_second_waits(alices, bobs, "on process 0", "on process 1")

    assert (await socket_frames_until(alices, "done"))[-1]["status"] == "done"
    rest = await socket_frames_until(bobs, "done")
    await alices.close()
    await bobs.close()
    assert "content" in [f["type"] for f in rest] and rest[-1]["status"] == "done"
    assert (
        request_of(simulator, "on process 1").started
        >= request_of(simulator, "on process 0").ended
    )


@on_database
async def test_a_killed_process_gives_its_slot_back(
    daphnes,
    one_slot_two_processes,
    simulator,
):
    alices, bobs = await one_slot_two_processes()
    slow_answers(simulator, tps=20, tokens=2000)
    started, waited = await first_runs_second_waits(alices, bobs, "dies", "waits")

    daphnes[0].stop(signal.SIGKILL)
    # The survivor's sweep marks the silent answer interrupted; that frees the slot.
    simulator.config.answer_tokens = 20
    rest = await socket_frames_until(bobs, "done", timeout=40)
    await bobs.close()
    assert "content" in [f["type"] for f in rest] and rest[-1]["status"] == "done"
    dead = await Message.objects.aget(pk=started[-1]["message_id"])
    assert dead.status == Message.Status.INTERRUPTED
    assert rest[-1]["message_id"] == waited[-1]["message_id"]
