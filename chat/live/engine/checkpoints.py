"""The partial answers' saves, and the sweep for answers whose process died.

One task per process (`run`) saves every running answer about once a second,
all in one trip to the database thread (docs/latency.md, rule 5): a task and a
connection per answer cost 100 connections a second with 100 answers streaming,
and their thread's hold on the GIL delayed the relay. The relay never awaits it.
Each save is also a heartbeat telling other processes the answer is alive; the
orphan sweep (run by every process) marks the answers that lost theirs. With
Redis, the owner's word through Redis (`chat.live.engine.processes.liveness`) decides,
as it
outlives a database outage (`sweep_silent`); without, the last save (`sweep`).
A save that fails is retried each round with the whole text, which the owner
keeps in memory until the database takes it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import BaseChannelLayer
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    connections,
    router,
    transaction,
)
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from chat.live.engine.generation import Generation
from chat.live.engine.processes import liveness
from chat.live.engine.processes.fanout import spans_processes
from chat.models import Message

logger = logging.getLogger(__name__)

# Coupled intervals. An answer's owner proves it alive with a checkpoint every
# CHECKPOINT_SECONDS; the orphan sweep (every SWEEP_SECONDS, on every process)
# calls it orphaned when that proof is older than ORPHAN_AFTER, and, with
# Redis, its owner's word through Redis (`chat.live.engine.processes.liveness`) has
# lapsed too:
# that one does not depend on the database, which the owner may reach later
# than the sweeper after an outage (`sweep_silent`). Without Redis (one
# process) the database is all there is: while it is away no proof can land,
# however alive the owner, so a sweep only judges once its own process has
# reached the database for ORPHAN_AFTER without a failed sweep
# (`Runner._trusted_since`), which gives the owner's heartbeat as long to land
# after an outage. An outage too short for any sweep to see (under
# SWEEP_SECONDS) delays a heartbeat by less than SWEEP_SECONDS +
# CHECKPOINT_SECONDS, which must stay below ORPHAN_AFTER. (ORPHAN_AFTER is a
# fact about stored answers, defined beside them: the pages use it too.)
CHECKPOINT_SECONDS = 1.0
ORPHAN_AFTER = Message.ORPHAN_AFTER
SWEEP_SECONDS = 5.0

# (message id, content, thinking, steps): no text for a heartbeat; steps
# (`Message.steps`) only for a turn with tools.
Row = tuple[int, str | None, str | None, list[dict[str, Any]] | None]


async def run(
    generations: Mapping[int, Generation],
    let_go: Callable[[Generation], None],
    layer: BaseChannelLayer | None = None,
    owner: str = "",
) -> None:
    """Save the partial answers about once a second, until none is running.

    Each save is also a heartbeat that tells other processes the answer is
    alive (see `sweep`), so unchanged answers still get one. `generations` is
    the runner's live registry; `let_go` unregisters one whose task ended.
    With a layer that spans processes (Redis), the answers' heartbeat through
    it runs beside, in a task of its own: a save can wait out the database's
    pool timeout, a heartbeat must not (`chat.live.engine.processes.liveness`).
    """
    beats = None
    if layer is not None and spans_processes(layer):
        beats = asyncio.create_task(
            liveness.run(generations, layer, owner), name="heartbeat"
        )
    try:
        while generations:
            await asyncio.sleep(CHECKPOINT_SECONDS)
            # Only a running task's answer gets a heartbeat: one without would
            # look alive to the orphan sweep for ever. A generation whose task
            # ended without unregistering it is let go.
            for g in list(generations.values()):
                if g.task is None or g.task.done():
                    let_go(g)
            await save(generations.values())
    finally:
        if beats is not None:
            beats.cancel()


async def save(generations: Iterable[Generation]) -> None:
    """One round: the text of the answers that grew since their last save, a
    heartbeat (the time alone) for the others."""
    # An answer asked for before its row was written has no id yet (its turn
    # is being stored, `chat.live.engine.turn.beginning`): nothing to save of it.
    batch = [
        (g, g.lengths(), g.steps_version())
        for g in generations
        if g.message.pk is not None
    ]
    if not batch:
        return
    rows: list[Row] = [
        (g.message_id, None, None, None)
        if seen == g.checkpointed and version == g.checkpointed_steps
        else (g.message_id, g.content_text(), g.thinking_text(), g.step_parts())
        for g, seen, version in batch
    ]
    try:
        failed = await _checkpoint(rows)
    except Exception:
        # The database may be briefly away: the next round retries.
        logger.warning("checkpoint of %d answers failed", len(rows), exc_info=True)
        return
    for g, seen, version in batch:
        if g.message_id not in failed:
            g.checkpointed, g.checkpointed_steps = seen, version


async def sweep(
    trusted_since: float | None, own: Sequence[int]
) -> tuple[float | None, list[Message]]:
    """Answers left streaming by a dead process, marked interrupted (their text
    kept); returns when this process has reached the database since without a
    failure, and those answers (for their viewers). Only judges once that has
    lasted ORPHAN_AFTER, long enough for live owners to have checkpointed;
    `own`, this process's answers, are alive by definition. Raises when the
    database is away (the caller then trusts it no more)."""
    if (
        trusted_since is None
        or time.monotonic() - trusted_since <= ORPHAN_AFTER.total_seconds()
    ):
        await database_sync_to_async(_reach_database)()  # raises if away
        # Trusted from the answer, not from the question: the trip may have
        # waited out the pool's timeout (DATABASES in chatsite/settings.py)
        # while the database came back, and trust counted from before that
        # ended the owners' grace up to that timeout early.
        return (time.monotonic() if trusted_since is None else trusted_since), []
    return trusted_since, await _interrupt(own, None)


async def sweep_silent(
    silences: liveness.Silences, own: Sequence[int], layer: BaseChannelLayer
) -> list[Message]:
    """With Redis: the answers with no save for ORPHAN_AFTER whose owner has
    been silent through Redis for as long (`chat.live.engine.processes.liveness`),
    marked
    interrupted (their text kept); returns them (for their viewers). An
    owner's silence does not depend on the database: one that reaches it
    later than this process after an outage keeps its answers. Raises when
    the database or Redis is away (nothing is judged then)."""
    stale = await database_sync_to_async(_stale)(own)
    silent_for = ORPHAN_AFTER.total_seconds() - liveness.EXPIRES_SECONDS
    lapsed = await silences.lapsed(layer, stale, max(silent_for, 0.0))
    heard = [pk for pk in stale if pk not in silences.missing_since]
    if heard:
        # The database is away for their owners (or was, and their pools are
        # reconnecting): they keep the text until it is back.
        logger.info(
            "answers %s: no save for %s, their owners alive", heard, ORPHAN_AFTER
        )
    return await _interrupt(own, lapsed) if lapsed else []


def _stale(own: Sequence[int]) -> list[int]:
    """Streaming answers of other processes with no save for ORPHAN_AFTER."""
    orphans = Message.objects.orphans(older_than=ORPHAN_AFTER).exclude(pk__in=own)
    return list(orphans.values_list("pk", flat=True))


async def _interrupt(own: Sequence[int], among: Sequence[int] | None) -> list[Message]:
    orphans = await database_sync_to_async(Message.objects.interrupt_orphans)(
        older_than=ORPHAN_AFTER, keep=own, among=among
    )
    for message in orphans:
        logger.warning("answer %s was orphaned: marked interrupted", message.pk)
    return orphans


def _reach_database() -> None:
    """A round trip to the database (raises when it is away)."""
    connection = connections[router.db_for_read(Message)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


@database_sync_to_async
def _checkpoint(rows: Sequence[Row]) -> set[int]:
    """One UPDATE per answer (message id, content, thinking; no text when it is
    unchanged), in one transaction. Answers no longer streaming (their final save
    came first) are left alone. Returns the ids whose text was not saved.

    Plain `executemany`, not a queryset per row: the ORM spends ~200 µs of Python
    per UPDATE, and while this thread holds the GIL for it (20-60 ms a second with
    100 answers streaming) the event loop waits for it after every socket call.

    One answer the database refuses must not cost the others their save (nor
    their heartbeat, which would let the orphan sweep interrupt them): the batch
    runs in a savepoint, and if it fails each row is tried again in its own, the
    refused one still getting its heartbeat. Raises only when no row could be
    written at all (the database is away: the caller retries next round).
    """
    using = router.db_for_write(Message)
    connection = connections[using]
    stamp = connection.ops.adapt_datetimefield_value(timezone.now())
    with transaction.atomic(using=using), connection.cursor() as cursor:
        try:
            with transaction.atomic(using=using):
                _write_checkpoint(cursor, rows, stamp)
            return set()
        except (OperationalError, InterfaceError):
            raise  # the database is away: no row would do better
        except (DatabaseError, ValueError):  # ValueError: UnicodeEncodeError
            logger.warning("checkpoint batch refused: saving row by row", exc_info=True)
        failed: set[int] = set()
        errors: list[Exception] = []
        written = 0
        for message_id, content, thinking, steps in rows:
            attempts: list[Row] = [(message_id, content, thinking, steps)]
            if content is not None:
                attempts.append((message_id, None, None, None))  # its heartbeat
            for attempt in attempts:
                try:
                    with transaction.atomic(using=using):
                        _write_checkpoint(cursor, [attempt], stamp)
                except (DatabaseError, ValueError) as exc:
                    logger.warning("checkpoint of answer %s refused", message_id)
                    failed.add(message_id)
                    errors.append(exc)
                    continue
                written += 1
                break
        if not written:
            raise errors[-1]
        return failed


def _write_checkpoint(cursor: Any, rows: Sequence[Row], stamp: Any) -> None:
    connection: BaseDatabaseWrapper = cursor.db
    qn = connection.ops.quote_name
    columns = {f.name: f.column for f in Message._meta.concrete_fields if f.column}

    def column(name: str) -> str:
        return qn(columns[name])

    table = qn(Message._meta.db_table)
    where = f"WHERE {column('id')} = %s AND {column('status')} = %s"
    streaming = Message.Status.STREAMING.value
    texts = [
        (content, thinking, stamp, message_id, streaming)
        for message_id, content, thinking, steps in rows
        if content is not None and steps is None
    ]
    beats = [
        (stamp, message_id, streaming)
        for message_id, content, _, _ in rows
        if content is None
    ]
    # A turn with tools: its steps too, as the JSON field stores them.
    field = Message._meta.get_field("steps")
    with_steps = [
        (content, thinking, field.get_db_prep_save(steps, connection), stamp)
        + (message_id, streaming)
        for message_id, content, thinking, steps in rows
        if content is not None and steps is not None
    ]
    if with_steps:
        cursor.executemany(
            f"UPDATE {table} SET {column('content')} = %s, "
            f"{column('thinking')} = %s, {column('steps')} = %s, "
            f"{column('updated_at')} = %s {where}",
            with_steps,
        )
    if texts:
        cursor.executemany(
            f"UPDATE {table} SET {column('content')} = %s, "
            f"{column('thinking')} = %s, {column('updated_at')} = %s {where}",
            texts,
        )
    if beats:
        cursor.executemany(
            f"UPDATE {table} SET {column('updated_at')} = %s {where}", beats
        )
