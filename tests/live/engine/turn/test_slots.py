"""A turn's slot while its tools run (`chat.live.engine.turn.slots`), on the
real database: given back, another answer takes it; taken back, the turn
waits for a free slot and then goes before answers that have not begun."""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async

from chat.live.engine import admission
from chat.live.engine.turn import slots
from chat.models import Message, Ticket, turn_rows
from tests.live.engine.admission.queueing import on_database


async def answer_of(conversation) -> Message:
    turn = await sync_to_async(turn_rows.begin_turn)(conversation, "question")
    return turn.answer


async def served(message: Message) -> bool:
    return await Ticket.objects.filter(
        message=message, served__isnull=False, paused=False
    ).aexists()


async def finish(message: Message) -> None:
    await Message.objects.filter(pk=message.pk).aupdate(status=Message.Status.DONE)
    await admission.release(message.pk, served=True)


@on_database
async def test_a_tool_run_lends_its_slot_and_takes_the_next_first(
    alice, bob, django_user_model, limits, conversations, demo_profile
):
    carol = await django_user_model.objects.acreate(username="carol")
    await sync_to_async(limits)(0, 1)
    [mine] = await sync_to_async(conversations)(alice)
    [theirs] = await sync_to_async(conversations)(bob)
    [later] = await sync_to_async(conversations)(carol)
    tool_turn = await answer_of(mine)
    assert (await admission.enqueue(tool_turn.pk, demo_profile.pk)).admit == [
        tool_turn.pk
    ]
    other = await answer_of(theirs)
    assert (await admission.enqueue(other.pk, demo_profile.pk)).admit == []

    assert await slots.give_back(tool_turn.pk)
    assert (await admission.recheck()).admit == [other.pk]  # the slot was lent
    newcomer = await answer_of(later)
    assert (await admission.enqueue(newcomer.pk, demo_profile.pk)).admit == []

    told: list[int] = []

    async def tell(position: int) -> None:
        told.append(position)

    back = asyncio.create_task(slots.take_back(tool_turn.pk, demo_profile.pk, tell))
    await asyncio.sleep(0)
    await asyncio.wait([back], timeout=0.3)
    assert not back.done() and told == [1]  # the slot is the other's still
    await finish(other)
    await asyncio.wait_for(back, 10)
    assert await served(tool_turn)
    assert not await served(newcomer)  # it came before the tool turn came back


@on_database
async def test_an_answer_without_a_ticket_has_no_slot_to_give(alice, conversations):
    [mine] = await sync_to_async(conversations)(alice)
    answer = await answer_of(mine)
    assert await slots.give_back(answer.pk) is False
