"""The checkpoint writer and the orphan sweep (`chat.live.engine.checkpoints`), on the
test database, without a runner: which rows a save writes, and when the sweep
judges."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import connection
from django.utils import timezone

from chat.live.engine import checkpoints
from chat.live.engine.generation import Generation
from chat.live.engine.processes import liveness
from chat.live.engine.processes.fanout import spans_processes
from chat.models import Conversation, Message, turn_rows
from chat.upstream import Delta

pytestmark = pytest.mark.django_db(transaction=True)

LONG_AGO = timedelta(hours=1)


async def streaming(conversation, content: str = "", thinking: str = "") -> Message:
    """A streaming answer whose last save is an hour old, holding this text."""
    turn = await database_sync_to_async(turn_rows.begin_turn)(conversation, "hello")
    answer = turn.answer
    await Message.objects.filter(pk=answer.pk).aupdate(
        content=content, thinking=thinking, updated_at=timezone.now() - LONG_AGO
    )
    return answer


async def stored(message: Message) -> Message:
    return await Message.objects.aget(pk=message.pk)


def recent(message: Message) -> bool:
    return timezone.now() - message.updated_at < LONG_AGO / 2


async def test_a_heartbeat_writes_the_time_alone(conversation):
    answer = await streaming(conversation, "kept", "kept too")
    assert await checkpoints._checkpoint([(answer.pk, None, None, None)]) == set()
    row = await stored(answer)
    assert (row.content, row.thinking) == ("kept", "kept too")
    assert recent(row)


async def test_a_text_checkpoint_writes_the_text_and_the_time(conversation):
    answer = await streaming(conversation, "old")
    assert (
        await checkpoints._checkpoint([(answer.pk, "new text", "thoughts", None)])
        == set()
    )
    row = await stored(answer)
    assert (row.content, row.thinking) == ("new text", "thoughts")
    assert recent(row)


async def test_an_answer_saved_for_good_is_left_alone(conversation):
    answer = await streaming(conversation, "final")
    await Message.objects.filter(pk=answer.pk).aupdate(status=Message.Status.DONE)
    await checkpoints._checkpoint(
        [(answer.pk, "partial", "", None), (answer.pk, None, None, None)]
    )
    row = await stored(answer)
    assert row.content == "final" and not recent(row)


async def test_a_refused_row_costs_the_others_nothing_and_keeps_its_heartbeat(
    conversation,
):
    if connection.vendor != "postgresql":
        # PostgreSQL refuses a NUL in text; SQLite stores it.
        pytest.skip("PostgreSQL's refusal (the PostgreSQL run has this test)")
    good = await streaming(conversation)
    await Message.objects.filter(pk=good.pk).aupdate(status=Message.Status.DONE)
    other = await database_sync_to_async(turn_rows.begin_turn)(conversation, "again")
    bad = other.answer
    await Message.objects.filter(pk=bad.pk).aupdate(
        updated_at=timezone.now() - LONG_AGO
    )
    await Message.objects.filter(pk=good.pk).aupdate(status=Message.Status.STREAMING)
    rows = [(good.pk, "fine", "", None), (bad.pk, "NUL \x00 here", "", None)]
    assert await checkpoints._checkpoint(rows) == {bad.pk}
    assert (await stored(good)).content == "fine"
    refused = await stored(bad)
    assert refused.content == "" and recent(refused)


def live(answer: Message) -> Generation:
    return Generation(answer.conversation_id, answer, "m", None)


async def test_a_round_saves_grown_text_and_beats_for_the_rest(conversation):
    grown_answer = await streaming(conversation, "old")
    grown = live(grown_answer)
    grown.apply([Delta("thinking", "hm"), Delta("content", "Hello")])
    await checkpoints.save([grown])
    assert ((await stored(grown_answer)).content, grown.checkpointed) == (
        "Hello",
        (2, 5),
    )
    # Unchanged since: the next round writes the time alone (the stored text,
    # changed behind its back here, stays).
    await Message.objects.filter(pk=grown_answer.pk).aupdate(
        content="elsewhere", updated_at=timezone.now() - LONG_AGO
    )
    await checkpoints.save([grown])
    row = await stored(grown_answer)
    assert row.content == "elsewhere" and recent(row)
    grown.apply([Delta("content", "!")])
    await checkpoints.save([grown])
    assert (await stored(grown_answer)).content == "Hello!"
    assert grown.checkpointed == (2, 6)


async def test_a_round_that_fails_keeps_the_text_for_the_next(
    conversation, monkeypatch
):
    answer = await streaming(conversation)
    g = live(answer)
    g.apply([Delta("content", "abc")])

    async def away(rows):
        raise ConnectionError("database away")

    with monkeypatch.context() as patched:
        patched.setattr(checkpoints, "_checkpoint", away)
        await checkpoints.save([g])
    assert g.checkpointed == (0, 0)
    await checkpoints.save([g])
    assert (await stored(answer)).content == "abc"


async def test_the_sweep_judges_only_after_trusting_the_database_long_enough(
    conversation,
):
    orphan = await streaming(conversation, "left behind")
    trusted, marked = await checkpoints.sweep(None, [])
    assert trusted is not None and marked == []
    assert (await stored(orphan)).status == Message.Status.STREAMING
    again, marked = await checkpoints.sweep(trusted, [])
    assert again == trusted and marked == []  # not long enough yet
    long_ago = time.monotonic() - checkpoints.ORPHAN_AFTER.total_seconds() - 1
    kept, marked = await checkpoints.sweep(long_ago, [orphan.pk])
    assert kept == long_ago and marked == []  # its own answer: alive
    _, marked = await checkpoints.sweep(long_ago, [])
    assert [m.pk for m in marked] == [orphan.pk]
    row = await stored(orphan)
    assert row.status == Message.Status.INTERRUPTED and row.content == "left behind"


async def test_a_recent_checkpoint_is_no_orphan(conversation):
    answer = await streaming(conversation)
    await checkpoints._checkpoint([(answer.pk, None, None, None)])
    long_ago = time.monotonic() - checkpoints.ORPHAN_AFTER.total_seconds() - 1
    _, marked = await checkpoints.sweep(long_ago, [])
    assert marked == []
    assert (await stored(answer)).status == Message.Status.STREAMING


def test_the_coupled_intervals_leave_an_unseen_outage_room():
    """An outage shorter than a sweep delays a heartbeat by less than a sweep
    and a checkpoint interval: still under ORPHAN_AFTER (see the comment)."""
    silence = checkpoints.SWEEP_SECONDS + checkpoints.CHECKPOINT_SECONDS
    assert silence < checkpoints.ORPHAN_AFTER.total_seconds()


async def test_an_answer_whose_row_is_not_written_yet_is_left_for_the_next_round(
    conversation,
):
    """Asked for before its turn is stored (docs/latency.md, rule 8), an answer
    has no id until the commit: a round meanwhile saves the others and leaves
    it, its text kept for the round after."""
    answer = await streaming(conversation)
    written = live(answer)
    written.apply([Delta("content", "abc")])
    unwritten = live(Message(conversation_id=conversation.pk, role="assistant"))
    unwritten.apply([Delta("content", "xyz")])
    await checkpoints.save([unwritten, written])
    assert (await stored(answer)).content == "abc"
    assert unwritten.checkpointed == (0, 0)


async def test_trust_in_the_database_counts_from_its_answer(conversation, monkeypatch):
    """A sweep's trip may wait out the pool's timeout while the database comes
    back: trust counted from before it would end the owners' grace that much
    early (issue 40, finding 6)."""
    reach = checkpoints._reach_database

    def slow() -> None:
        time.sleep(0.3)  # stands for the pool's wait for a connection
        reach()

    monkeypatch.setattr(checkpoints, "_reach_database", slow)
    asked = time.monotonic()
    trusted, _ = await checkpoints.sweep(None, [])
    assert trusted is not None and trusted - asked >= 0.3


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def redis() -> Any:
    layer = get_channel_layer()
    if not spans_processes(layer):
        pytest.skip("needs Redis")
    return layer


SILENT_FOR = checkpoints.ORPHAN_AFTER.total_seconds() - liveness.EXPIRES_SECONDS


async def test_an_owner_heard_through_redis_keeps_an_answer_with_no_recent_save(
    conversation,
):
    """The database was away for the owner (its saves failed): its word
    through Redis keeps its answer, however long the sweeps look."""
    layer = redis()
    answer = await streaming(conversation, "kept")
    clock = Clock()
    silences = liveness.Silences(clock)
    for _ in range(3):
        await liveness.beat(layer, [answer.pk], "owner")
        assert await checkpoints.sweep_silent(silences, [], layer) == []
        clock.now += SILENT_FOR + 1
    assert (await stored(answer)).status == Message.Status.STREAMING


async def test_a_silent_owner_s_answer_is_interrupted_with_its_last_save(conversation):
    layer = redis()
    answer = await streaming(conversation, "last checkpoint")
    other = await Conversation.objects.acreate(
        owner_id=conversation.owner_id, model_profile_id=conversation.model_profile_id
    )
    kept = await streaming(other, "its own")
    clock = Clock()
    silences = liveness.Silences(clock)
    assert await checkpoints.sweep_silent(silences, [kept.pk], layer) == []
    clock.now += SILENT_FOR / 2
    assert await checkpoints.sweep_silent(silences, [kept.pk], layer) == []
    clock.now += SILENT_FOR / 2
    marked = await checkpoints.sweep_silent(silences, [kept.pk], layer)
    assert [m.pk for m in marked] == [answer.pk]
    row = await stored(answer)
    assert (row.status, row.content) == (Message.Status.INTERRUPTED, "last checkpoint")
    assert (await stored(kept)).status == Message.Status.STREAMING


async def test_a_word_from_the_owner_starts_its_silence_again(conversation):
    """As when Redis restarted empty: the key is missing until the owner's next
    beat, which it gets within a second; the silence counts from after that."""
    layer = redis()
    answer = await streaming(conversation)
    clock = Clock()
    silences = liveness.Silences(clock)
    assert await checkpoints.sweep_silent(silences, [], layer) == []  # missing
    clock.now += SILENT_FOR / 2
    await liveness.beat(layer, [answer.pk], "owner")
    assert await checkpoints.sweep_silent(silences, [], layer) == []  # heard
    await layer.connection(0).delete(f"{liveness.PREFIX}{answer.pk}")  # expired
    clock.now += SILENT_FOR / 2
    assert await checkpoints.sweep_silent(silences, [], layer) == []  # missing again
    clock.now += SILENT_FOR
    assert [m.pk for m in await checkpoints.sweep_silent(silences, [], layer)] == [
        answer.pk
    ]
