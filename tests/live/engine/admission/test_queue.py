"""The fair queue through the socket, on the real database and channel layer: the
model's slots and the per-user limit queue answers, with their `queued` frames
and places in line, fair across users; a stop, a reload, an answer started
without a ticket and a shutdown while queued."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from chat.live.engine import admission
from chat.live.engine.runner import runner
from chat.models import Message, Ticket, turn_rows
from tests.live.engine.admission.queueing import (
    HELD_TOKENS,
    end_running,
    on_database,
    queued,
    request_of,
    running,
    slow_answers,
)
from tests.support.communicators import connect, frames_until
from tests.support.waiting import settled, ticket_released


@on_database
async def test_model_slots_queue_the_next_answer_until_one_frees(
    alice, bob, limits, conversations, simulator
):
    await sync_to_async(limits)(0, 1)
    [mine] = await sync_to_async(conversations)(alice)
    [theirs] = await sync_to_async(conversations)(bob)
    slow_answers(simulator, tokens=HELD_TOKENS)
    first, _ = await running(alice, mine, "first")
    second, waited = await queued(bob, theirs, "second")

    kinds = [f["type"] for f in waited]
    assert kinds.index("start") < kinds.index("queued")
    assert waited[-1]["position"] == 1
    assert waited[-1]["message_id"] == waited[kinds.index("start")]["message_id"]
    await end_running(first, simulator)
    rest = await frames_until(second, "done")
    await frames_until(first, "done")
    await first.disconnect()
    await second.disconnect()

    assert rest[-1]["status"] == "done"
    assert (
        request_of(simulator, "second").started >= request_of(simulator, "first").ended
    )
    answer = await Message.objects.aget(pk=waited[-1]["message_id"])
    assert answer.queue_wait_ms > 0
    assert not await Ticket.objects.filter(served=None).aexists()


@on_database
async def test_per_user_limit_queues_that_user_only(
    alice, bob, limits, conversations, simulator
):
    await sync_to_async(limits)(1, 0)
    first_conv, second_conv = await sync_to_async(conversations)(alice, 2)
    [bobs] = await sync_to_async(conversations)(bob)
    slow_answers(simulator, tokens=HELD_TOKENS)
    first, _ = await running(alice, first_conv, "alice 1")
    second, waited = await queued(alice, second_conv, "alice 2")
    other, started = await running(bob, bobs, "bob 1")  # not held up by Alice

    assert waited[-1]["position"] == 1
    assert "queued" not in [f["type"] for f in started]
    await end_running(first, simulator)
    await other.send_json_to({"type": "stop"})
    ends = ((first, "stopped"), (second, "done"), (other, "stopped"))
    for communicator, status in ends:
        assert (await frames_until(communicator, "done"))[-1]["status"] == status
        await communicator.disconnect()
    assert (
        request_of(simulator, "alice 2").started
        >= request_of(simulator, "alice 1").ended
    )


@on_database
async def test_queue_is_fair_across_users(alice, bob, limits, conversations, simulator):
    await sync_to_async(limits)(0, 1)
    a1, a2, a3 = await sync_to_async(conversations)(alice, 3)
    [b1] = await sync_to_async(conversations)(bob)
    slow_answers(simulator, tps=30, tokens=HELD_TOKENS)
    sockets = [(await running(alice, a1, "a1"))[0]]
    for conversation, content, position in ((a2, "a2", 1), (a3, "a3", 2)):
        communicator, waited = await queued(alice, conversation, content)
        assert waited[-1]["position"] == position
        sockets.append(communicator)
    # Bob's one question goes before Alice's second and third.
    bobs, waited = await queued(bob, b1, "b1")
    assert waited[-1]["position"] == 1
    moved = await frames_until(sockets[1], "queued")
    assert moved[-1]["position"] == 2
    sockets.append(bobs)
    await end_running(sockets[0], simulator, tokens=45)
    for communicator in sockets:
        await frames_until(communicator, "done", timeout=30)
        await communicator.disconnect()

    order = [e.body["messages"][-1]["content"] for e in simulator.log]
    assert order == ["a1", "b1", "a2", "a3"]


@on_database
async def test_positions_move_up_as_answers_finish(alice, one_slot, simulator):
    c1, c2, c3 = await one_slot(3, tokens=HELD_TOKENS)
    first, _ = await running(alice, c1)
    second, _ = await queued(alice, c2)
    third, waited = await queued(alice, c3)
    assert waited[-1]["position"] == 2

    await end_running(first, simulator)
    await frames_until(first, "done")
    moved = await frames_until(third, "queued")
    assert moved[-1]["position"] == 1
    assert "content" in [f["type"] for f in await frames_until(second, "done")]
    assert "content" in [f["type"] for f in await frames_until(third, "done")]
    for communicator in (first, second, third):
        await communicator.disconnect()


@on_database
async def test_stop_while_queued_cancels_the_wait_and_frees_the_place(
    alice, one_slot, simulator
):
    c1, c2, c3 = await one_slot(3)
    first, _ = await running(alice, c1, "runs")
    second, waited = await queued(alice, c2, "stopped in line")
    message_id = waited[-1]["message_id"]

    await second.send_json_to({"type": "stop"})
    closing = await frames_until(second, "message")
    assert closing[-2]["type"] == "done" and closing[-2]["status"] == "stopped"
    answer = await settled(message_id)
    assert answer.status == Message.Status.STOPPED and answer.content == ""
    # Its ticket goes right after the final save (and its frames).
    await ticket_released(message_id)

    await frames_until(first, "done")
    # The slot went back: the next answer starts without waiting.
    third, started = await running(alice, c3, "next")
    assert "queued" not in [f["type"] for f in started]
    await frames_until(third, "done")
    for communicator in (first, second, third):
        await communicator.disconnect()
    asked = [e.body["messages"][-1]["content"] for e in simulator.log]
    assert asked == ["runs", "next"]  # the stopped one never reached the model
    assert not await Ticket.objects.filter(served=None).aexists()


@on_database
async def test_a_reloaded_tab_sees_its_place_in_line(alice, one_slot, simulator):
    c1, c2 = await one_slot(2)
    first, _ = await running(alice, c1)
    second, waited = await queued(alice, c2)
    message_id = waited[-1]["message_id"]
    await second.disconnect()

    reloaded = await connect(alice, c2)
    await reloaded.send_json_to(
        {"type": "resume", "message_id": message_id, "offset": 0}
    )
    resumed = await frames_until(reloaded, "queued")
    assert [f["type"] for f in resumed] == ["start", "queued"]
    assert resumed[-1] == {"type": "queued", "message_id": message_id, "position": 1}
    rest = await frames_until(reloaded, "done")
    await frames_until(first, "done")
    await first.disconnect()
    await reloaded.disconnect()
    answer = await Message.objects.aget(pk=message_id)
    assert answer.status == Message.Status.DONE
    assert "".join(f["delta"] for f in rest if f["type"] == "content") == answer.content


@on_database
async def test_an_answer_started_without_a_ticket_takes_one_and_waits(
    alice, one_slot, simulator
):
    c1, c2 = await one_slot(2)
    first, _ = await running(alice, c1, "first")
    # Started by other means than a question on the socket: no ticket yet.
    turn = await sync_to_async(turn_rows.begin_turn)(c2, "second")
    watcher = await connect(alice, c2)
    assert runner.claim(c2.pk)
    await runner.start(turn.profile, turn.answer, turn.history)

    waited = await frames_until(watcher, "queued")
    assert waited[-1] == {"type": "queued", "message_id": turn.answer.pk, "position": 1}
    assert (await frames_until(watcher, "done"))[-1]["status"] == "done"
    await frames_until(first, "done")
    await first.disconnect()
    await watcher.disconnect()
    assert (
        request_of(simulator, "second").started >= request_of(simulator, "first").ended
    )


@on_database
async def test_a_question_hands_its_first_decision_to_the_answer(
    alice, conversation, simulator, monkeypatch
):
    """The decision taken with the ticket, in the turn's own transaction, is
    handed to the answer's wait (`Runner.start(plan=...)`): it does not decide again."""

    async def decided_again(*args: object) -> None:
        raise AssertionError("the answer's wait decided again")

    monkeypatch.setattr(admission, "enqueue", decided_again)
    communicator, _ = await running(alice, conversation)
    assert (await frames_until(communicator, "done"))[-1]["status"] == "done"
    await communicator.disconnect()


@on_database
async def test_a_shutdown_while_queued_keeps_the_answer_as_interrupted(
    alice, one_slot, simulator
):
    c1, c2 = await one_slot(2, tokens=400)
    first, _ = await running(alice, c1)
    second, waited = await queued(alice, c2)
    message_id = waited[-1]["message_id"]

    await runner.shutdown()
    answer = await settled(message_id)
    assert answer.status == Message.Status.INTERRUPTED
    assert answer.error_detail  # the reader is told why
    await ticket_released(message_id)
    assert [e.body["messages"][-1]["content"] for e in simulator.log] == ["Hello there"]
    await first.disconnect()
    await second.disconnect()
