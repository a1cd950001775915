"""Whether an answer's owner is alive, told through Redis.

A checkpoint (`chat.live.engine.checkpoints`) says so through the database, but no
checkpoint lands while the database is away, nor after it came back while the
owner's connection pool is still reconnecting (psycopg-pool backs off between
attempts, and a call waits up to the pool's timeout: DATABASES in
chatsite/settings.py). Judged from its last checkpoint alone, a live answer was
taken for an orphan by another process that reached the database first, and its
text after the outage was lost (issue 40, finding 6).

Redis does not go away with the database. Every process with running answers
writes one key per answer every BEAT_SECONDS, expiring after EXPIRES_SECONDS, in
one pipeline (`beat`). The orphan sweep of every process takes an answer only
once its key has been missing for the rest of ORPHAN_AFTER, seen by its own reads
(`Silences`): a Redis that restarted empty has the keys again within
BEAT_SECONDS, and a read that fails forgets what was seen. So an owner is
declared gone only after ORPHAN_AFTER (Message.ORPHAN_AFTER) without a word
from it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from channels.layers import BaseChannelLayer

from chat.live.engine.generation import Generation

logger = logging.getLogger(__name__)

BEAT_SECONDS = 1.0
EXPIRES_SECONDS = 5.0
PREFIX = "chatsite:answer-alive:"


def beating(generations: Iterable[Generation]) -> list[int]:
    """The answers to beat for: stored, and their task running (one whose task
    ended must not look alive for ever)."""
    return [
        g.message_id
        for g in generations
        if g.message.pk is not None and g.task is not None and not g.task.done()
    ]


async def run(
    generations: Mapping[int, Generation], layer: BaseChannelLayer, owner: str
) -> None:
    """Beat for the running answers every BEAT_SECONDS, until none runs (the
    checkpoint task starts and ends this one: `chat.live.engine.checkpoints.run`)."""
    failed = False
    while generations:
        try:
            await beat(layer, beating(generations.values()), owner)
            failed = False
        except Exception:
            # Redis away: the next beat tries again. Once per outage in the log.
            if not failed:
                logger.warning("answers' heartbeat failed", exc_info=True)
            failed = True
        await asyncio.sleep(BEAT_SECONDS)


async def beat(layer: BaseChannelLayer, message_ids: Sequence[int], owner: str) -> None:
    """One trip per Redis shard: each answer's key set again, with its expiry."""
    for client, keys in _by_shard(layer, message_ids).items():
        async with client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.set(key, owner, ex=int(EXPIRES_SECONDS))
            await pipe.execute()


async def heard(layer: BaseChannelLayer, message_ids: Sequence[int]) -> set[int]:
    """The answers whose key is there (raises when Redis is away)."""
    alive: set[int] = set()
    for client, keys in _by_shard(layer, message_ids).items():
        values = await client.mget(keys)
        alive |= {_id(k) for k, v in zip(keys, values, strict=True) if v is not None}
    return alive


class Silences:
    """What one process's sweeps saw of other processes' answers: since when
    each answer's key has been missing, by this process's clock."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.missing_since: dict[int, float] = {}

    async def lapsed(
        self, layer: BaseChannelLayer, message_ids: Sequence[int], silent_for: float
    ) -> list[int]:
        """Of `message_ids`, those whose key this process has seen missing for
        `silent_for` seconds (the rest of ORPHAN_AFTER once a key expired: see
        `chat.live.engine.checkpoints.sweep`). Raises when Redis is away, after
        forgetting every silence seen (it may have been broken meanwhile)."""
        try:
            alive = await heard(layer, message_ids)
        except Exception:
            self.missing_since.clear()
            raise
        now = self.clock()
        since = self.missing_since
        self.missing_since = {
            pk: since.get(pk, now) for pk in message_ids if pk not in alive
        }
        return [
            pk for pk, first in self.missing_since.items() if now - first >= silent_for
        ]


def _by_shard(
    layer: BaseChannelLayer, message_ids: Sequence[int]
) -> dict[Any, list[str]]:
    connection: Callable[[int], Any] = getattr(layer, "connection")  # noqa: B009
    consistent_hash: Callable[[str], int] = getattr(layer, "consistent_hash")  # noqa: B009
    shards: dict[int, list[str]] = {}
    for pk in message_ids:
        key = f"{PREFIX}{pk}"
        shards.setdefault(consistent_hash(key), []).append(key)
    return {connection(index): keys for index, keys in shards.items()}


def _id(key: str) -> int:
    return int(key.removeprefix(PREFIX))
