"""Initialised Streamable HTTP sessions kept for the next call, on the tools
loop: opening one costs `initialize`, its notification and the event
stream's GET (and closing it a DELETE), 50-130 ms a call on the test
machine (bench/tools).

Kept by server (its row's version: a change in the admin is met fresh) and
by the digest of the headers (the user's credential is in every request's
headers, so a session is one user's), at most `MCP_HTTP_POOL_SIZE` unused in
all (the longest unused goes first), each at most `MCP_HTTP_IDLE_SECONDS`
unused. A session is lent to one call at a time; one that failed in any way
is closed, not given back. A server that forgot a session (restarted, or
expired it: HTTP 404 on its id, the spec's "Session terminated") is met by
the caller with a fresh one (`chat.tools.mcp.sessions`).

Each session lives in a task of its own: the SDK's transport is an anyio
task group, which must be left by the task that entered it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from django.conf import settings
from mcp import ClientSession

from chat.tools.mcp.config import ServerConfig, headers_digest
from chat.tools.mcp.messages import Limits
from chat.tools.mcp.thread import when_stopping
from chat.tools.mcp.transports import http_session

Key = tuple[int, str, str, float, str, Limits]


class Kept:
    """One session, open in its own task until `close`."""

    def __init__(
        self, config: ServerConfig, headers: Mapping[str, str], limits: Limits
    ) -> None:
        self.session: ClientSession | None = None
        self.error: BaseException | None = None
        self.ready = asyncio.Event()
        self.closing = asyncio.Event()
        self.forgotten = asyncio.Event()
        self.unused_since = time.monotonic()
        self.task = asyncio.get_running_loop().create_task(
            self._run(config, headers, limits)
        )

    async def opened(self) -> ClientSession:
        await self.ready.wait()
        if self.session is None:
            raise self.error or ConnectionError("the session ended")
        return self.session

    def close(self) -> None:
        self.closing.set()

    @property
    def alive(self) -> bool:
        return not (
            self.session is None or self.closing.is_set() or self.forgotten.is_set()
        )

    async def _run(
        self, config: ServerConfig, headers: Mapping[str, str], limits: Limits
    ) -> None:
        try:
            async with http_session(config, headers, limits, self.forgotten) as session:
                self.session = session
                self.ready.set()
                await self.closing.wait()
        except Exception as error:  # noqa: BLE001 - the borrower raises it
            self.error = error
        finally:
            self.session = None
            self.ready.set()


class Pool:
    def __init__(self) -> None:
        self.unused: dict[Key, list[Kept]] = {}
        self.opened = 0  # sessions opened in all (tests, the bench)
        self._sweep: asyncio.TimerHandle | None = None
        when_stopping(self.close_all)

    @asynccontextmanager
    async def lent(
        self, config: ServerConfig, headers: Mapping[str, str], limits: Limits
    ) -> AsyncIterator[tuple[ClientSession, Kept | None]]:
        """A session, and what kept it when it was kept from before (a fresh
        one's failure is the server's answer; a kept one's may be that the
        server forgot it: `Kept.forgotten`)."""
        # The timeout is the session's HTTP read timeout: a session opened by
        # the tools menu's 3 s listing, lent to a turn's longer call, cut it
        # at 3 s ("SSE stream ended without a response":
        # tests/browser/tools/test_tool_turn.py).
        key = (
            config.pk,
            config.version,
            config.url,
            config.timeout,
            headers_digest(headers),
            limits,
        )
        kept = self._take(key)
        reused = kept is not None
        if kept is None:
            kept = Kept(config, headers, limits)
            self.opened += 1
        try:
            session = await kept.opened()
            yield session, kept if reused else None
        except BaseException:
            kept.close()
            raise
        self._give_back(key, kept)

    async def close_all(self) -> None:
        """Close every unused session (the tools loop stops; tests)."""
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        kept = [each for queue in self.unused.values() for each in queue]
        self.unused.clear()
        for each in kept:
            each.close()
        with contextlib.suppress(Exception):
            await asyncio.gather(*(each.task for each in kept))

    def _take(self, key: Key) -> Kept | None:
        queue = self.unused.get(key, [])
        while queue:
            kept = queue.pop()
            if kept.alive and not self._expired(kept, time.monotonic()):
                return kept
            kept.close()
        self.unused.pop(key, None)
        return None

    def _give_back(self, key: Key, kept: Kept) -> None:
        size = int(settings.MCP_HTTP_POOL_SIZE)
        if size <= 0 or not kept.alive:
            kept.close()
            return
        kept.unused_since = time.monotonic()
        self.unused.setdefault(key, []).append(kept)
        everything = sorted(
            ((k, each) for k, queue in self.unused.items() for each in queue),
            key=lambda pair: pair[1].unused_since,
        )
        for k, oldest in everything[: max(0, len(everything) - size)]:
            self._drop(k, oldest)
        if self._sweep is None:
            self._sweep = asyncio.get_running_loop().call_later(
                float(settings.MCP_HTTP_IDLE_SECONDS), self._swept
            )

    def _swept(self) -> None:
        self._sweep = None
        now = time.monotonic()
        for key, queue in list(self.unused.items()):
            for kept in [each for each in queue if self._expired(each, now)]:
                self._drop(key, kept)
        if self.unused:
            self._sweep = asyncio.get_running_loop().call_later(
                float(settings.MCP_HTTP_IDLE_SECONDS) / 2, self._swept
            )

    def _drop(self, key: Key, kept: Kept) -> None:
        queue = self.unused.get(key, [])
        if kept in queue:
            queue.remove(kept)
        if not queue:
            self.unused.pop(key, None)
        kept.close()

    @staticmethod
    def _expired(kept: Kept, now: float) -> bool:
        return now - kept.unused_since > float(settings.MCP_HTTP_IDLE_SECONDS)


pool = Pool()
