"""The one way sockets and the runner talk to the channel layer (Redis).

What crosses processes through it (`chat.live.engine.processes.fanout`) is an extra: a
socket's own
conversation streams to it in-process whatever Redis does. So every call here
is guarded: a failure is logged and reported as False, it never closes a socket
(a 1011) nor cuts short the work that made it.

Group membership lives in Redis, which loses it when it restarts empty. The
process keeps the memberships it wants (`Memberships`) and `watch` puts them
back whenever Redis lost them or a call failed (see `Memberships.watch`).

`RedisChannelLayer` is channels-redis' layer with a bounded pool that waits
for a free connection: redis-py's own pool allows 100 and then raises "Too many
connections" at the 101st concurrent call, which under load failed sockets'
`group_add`.

Its `receive` ends when it is cancelled, every time: see `RedisChannelLayer.receive`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from channels.layers import BaseChannelLayer, get_channel_layer
from channels_redis.core import RedisChannelLayer as BaseRedisChannelLayer
from redis.asyncio import BlockingConnectionPool

from chat.live.engine.processes.fanout import spans_processes

logger = logging.getLogger(__name__)

# How often a process checks that Redis still holds its memberships, and how
# long a socket's failed read of its channel waits before the next try.
WATCH_SECONDS = 1.0
RETRY_SECONDS = 1.0
# The marker's expiry: when it runs out the process re-joins once, harmlessly.
MARKER_SECONDS = 86400
# How long a cancelled read gets to end before it is cancelled again.
RECANCEL_SECONDS = 0.05


class RedisChannelLayer(BaseRedisChannelLayer):  # type: ignore[misc]
    """channels-redis with a waiting pool. A host's `max_connections` bounds the
    pool (per event loop) and `timeout` is how long a call waits for a free
    connection before it fails (see `CHANNEL_LAYERS` in chatsite/settings.py)."""

    def create_pool(self, index: int) -> Any:
        host = dict(self.hosts[index])
        if "address" not in host:
            return super().create_pool(index)
        return BlockingConnectionPool.from_url(host.pop("address"), **host)

    async def receive(self, channel: str) -> Any:
        """channels-redis' read of `channel`, which ends when it is cancelled.

        A socket that ends cancels its read (channels' `await_many_dispatch`).
        On Python 3.11 that cancellation can be lost: redis-py sends each
        command through `asyncio.wait_for` (it does when `socket_timeout` is
        set, as chatsite/settings.py sets it), which returns the send's result
        instead of raising when the cancellation lands as the send completes
        (redis/redis-py#2028; `wait_for` keeps it since 3.12). The read then
        pops its channel forever, 5 s at a time, and the socket's consumer
        waits for it forever: a leaked consumer holding a pooled connection in
        a server, a hung test in the suite
        (tests/live/engine/processes/test_layer.py). So the read runs as a
        task of its own, shielded, and is cancelled again until it has ended;
        only then does the cancellation go on."""
        read = asyncio.ensure_future(super().receive(channel))
        try:
            return await asyncio.shield(read)
        except asyncio.CancelledError:
            try:
                while not read.done():
                    read.cancel()
                    await asyncio.wait([read], timeout=RECANCEL_SECONDS)
            finally:
                read.cancel()
                if read.done() and not read.cancelled():
                    read.exception()  # retrieved: the read failed as it ended
            raise

    async def elsewhere(self, group: str) -> bool:
        """Whether `group` holds a channel of another process: channels-redis
        keeps a group as a sorted set of channel names, and this process's
        channels carry its layer's client prefix (`new_channel`). One read."""
        connection = self.connection(self.consistent_hash(group))
        names = await connection.zrange(self._group_key(group), 0, -1)
        own = f"{self.client_prefix}!".encode()
        return any(own not in name for name in names)


Call = Callable[[BaseChannelLayer], Awaitable[Any]]


async def guarded(what: str, call: Call) -> bool:
    """Make one call on the process's layer; False (logged) when it failed."""
    layer = get_channel_layer()
    if layer is None:
        return False
    try:
        await call(layer)
    except Exception:
        logger.warning("channel layer: %s failed", what, exc_info=True)
        memberships.dirty = True
        return False
    return True


async def send(channel: str, message: Mapping[str, Any]) -> bool:
    return await guarded(f"send to {channel}", lambda c: c.send(channel, dict(message)))


async def group_send(group: str, message: Mapping[str, Any]) -> bool:
    return await guarded(
        f"send to {group}", lambda c: c.group_send(group, dict(message))
    )


async def join(group: str, channel: str) -> bool:
    """Put `channel` in `group`, now and after Redis lost it."""
    memberships.want(group, channel)
    return await guarded(f"joining {group}", lambda c: c.group_add(group, channel))


def forget(group: str, channel: str) -> None:
    """Stop re-establishing a membership, and leave Redis' copy to expire."""
    memberships.drop(group, channel)


async def leave(group: str, channel: str) -> bool:
    memberships.drop(group, channel)
    return await guarded(f"leaving {group}", lambda c: c.group_discard(group, channel))


async def leave_all(channel: str) -> None:
    """Every group of `channel` (a socket that ended, however it ended)."""
    for group in memberships.groups_of(channel):
        await leave(group, channel)


def retrying(read: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    """A socket's read of its channel that outlives Redis being away: a failed
    read is retried, so the socket stays open and keeps its in-process stream."""

    async def receive() -> Any:
        failed = False
        while True:
            try:
                return await read()
            except Exception:
                # Once per outage and socket: a thousand sockets retry each second.
                if not failed:
                    logger.warning("channel layer: a read failed", exc_info=True)
                failed = memberships.dirty = True
                await asyncio.sleep(RETRY_SECONDS)

    return receive


class Memberships:
    """The groups this process's channels want to be in.

    Redis restarted empty forgets every group; a failed `group_add` (Redis
    away, the pool timed out) leaves one missing. `watch` notices both: a
    marker key of this process's that has gone means Redis lost its data, and
    `dirty` means a call failed. Either way it adds every wanted membership
    again (adding is idempotent in Redis).
    """

    def __init__(self) -> None:
        self.wanted: dict[str, set[str]] = {}  # channel -> groups
        self.dirty = False
        self.marker = f"chatsite:alive:{uuid.uuid4().hex}"

    def want(self, group: str, channel: str) -> None:
        self.wanted.setdefault(channel, set()).add(group)

    def drop(self, group: str, channel: str) -> None:
        groups = self.wanted.get(channel)
        if groups is not None:
            groups.discard(group)
            if not groups:
                del self.wanted[channel]

    def groups_of(self, channel: str) -> list[str]:
        return sorted(self.wanted.get(channel, ()))

    async def watch(self) -> None:
        """Run for the process's life (one of the runner's own tasks)."""
        while True:
            try:
                await self.check()
            except Exception:
                # Redis is away: the next round tries again.
                logger.debug("channel layer check failed", exc_info=True)
                self.dirty = True
            await asyncio.sleep(WATCH_SECONDS)

    async def check(self) -> None:
        layer = get_channel_layer()
        connection = getattr(layer, "connection", None)
        if layer is None or connection is None or not spans_processes(layer):
            return
        clients = [connection(i) for i in range(getattr(layer, "ring_size", 1))]
        lost = False
        for client in clients:
            lost |= not await client.exists(self.marker)
        if not (lost or self.dirty):
            return
        self.dirty = False
        await self.rejoin(layer)
        for client in clients:
            await client.set(self.marker, 1, ex=MARKER_SECONDS)

    async def rejoin(self, layer: BaseChannelLayer) -> None:
        pairs = [(g, c) for c, groups in self.wanted.items() for g in groups]
        if pairs:
            logger.warning("channel layer: re-joining %d groups", len(pairs))
        for group, channel in pairs:
            await layer.group_add(group, channel)


memberships = Memberships()
