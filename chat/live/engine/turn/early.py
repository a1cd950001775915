"""The model server is asked first (docs/latency.md, rule 8): a turn is stored
in the database thread, which says the moment its answer is admitted, before
the commit. The caller then starts the answer at once (`Runner.start`, with
`stored`) while the thread writes the rest and commits; a commit that fails
closes the upstream request (`asking.ask_while_storing`).

A sent question's turn is also shown before its commit: the thread says so once
the question's and the answer's rows are inserted (`Shown`), and the viewers
are told then; a commit that fails after that takes the turn back from them.

While the loop asks the model server, the database thread waits (`store`,
`Storing.asked`): the two share one GIL, and the rows' Python would take it from
the loop at each of the loop's system calls on the way to the request.

Used by the conversation's socket (`chat.sockets.consumers`) and the API
(`chat.api.answers`) alike (rule 9).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from channels.db import database_sync_to_async

from chat.live.protocol import frames

T = TypeVar("T")
R = TypeVar("R")


# How long the database thread waits, at most, for the model server to be asked
# once it handed an admitted answer over (`store`): a request that must open a
# connection first, or never goes out, costs the commit no more than this.
ASKED_WAIT = 0.005


async def store(
    begin: Callable[[Callable[[T], None]], R],
) -> tuple[asyncio.Task[R], T | None, Callable[[], None]]:
    """Run `begin(admitted)` in the database thread; `begin` calls `admitted`
    (from that thread) once the answer holds a slot, before its commit.

    Returns the task of the whole store; what `admitted` was given, or None
    when the store ended first (refused, failed, or its answer waits for a
    slot: the task is then done, with its result or its error); and what the
    loop calls once the model server's request is written (`Storing.asked`).
    Until then, or `ASKED_WAIT`, `admitted` does not return: the thread writes
    the rows after the request, not at the same time (the module's docstring)."""
    loop = asyncio.get_running_loop()
    early: asyncio.Future[T] = loop.create_future()
    asked = threading.Event()

    def admitted(value: T) -> None:
        loop.call_soon_threadsafe(early.set_result, value)
        asked.wait(ASKED_WAIT)  # gives the GIL up, as `_hand_over` does

    stored = asyncio.ensure_future(database_sync_to_async(begin)(admitted))
    # `admitted` is scheduled on the loop before the thread's result is: when
    # both happened, `early` is done first.
    either: list[asyncio.Future[Any]] = [stored, early]
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    return stored, early.result() if early.done() else None, asked.set


def _hand_over(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[T], value: T
) -> None:
    """Give `value` to a future of the event loop, from the database thread.

    The loop thread needs the GIL to act on it (tell the viewers), and this
    thread would keep it through the turn's last writes and commit (up to the
    5 ms switch interval): it is given up here. (An admitted answer's hand-over
    waits for the request instead: `store`.)"""
    loop.call_soon_threadsafe(future.set_result, value)
    time.sleep(0.0001)


class Shown:
    """What a turn's viewers may be told before its commit, and what takes it
    back if the commit then fails: set from the database thread once the
    turn's rows are inserted (`chat.live.engine.turn.beginning`)."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.future: asyncio.Future[Frames] = self._loop.create_future()

    def set(
        self, told: list[frames.ServerFrame], taken_back: list[frames.ServerFrame]
    ) -> None:
        """From the database thread: the loop tells the viewers while this
        thread goes on to the commit."""
        _hand_over(self._loop, self.future, (told, taken_back))


# What the viewers are told, and what takes it back.
Frames = tuple[list[frames.ServerFrame], list[frames.ServerFrame]]


@dataclass(frozen=True)
class Storing:
    """A turn committed while its answer starts (`Runner.start`, `storing`):
    `committed` is what its viewers are told once committed (its error if the
    commit failed); `shown`, what they may be told before (`Shown`)."""

    committed: asyncio.Future[list[frames.ServerFrame]]
    shown: asyncio.Future[Frames] | None
    # Called once the model server's request is written (or will not be): the
    # database thread, waiting since it handed the answer over, goes on.
    asked: Callable[[], None]

    async def told(self) -> Frames:
        """What to tell the viewers, as soon as it may be told, and what takes
        it back (nothing once committed). Raises the commit's error if it
        failed before anything could be told."""
        if self.shown is not None and not self.committed.done():
            either: list[asyncio.Future[Any]] = [self.committed, self.shown]
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if self.committed.done() or self.shown is None:
            return await self.committed, []
        return self.shown.result()


def told(
    stored: asyncio.Task[R],
    frames_of: Callable[[R], list[frames.ServerFrame]],
    asked: Callable[[], None],
    shown: Shown | None = None,
) -> Storing:
    """What the turn's viewers are told once `stored` committed (`frames_of`
    its result), or before if the thread showed it (`shown`); `asked`, what
    `store` returned with `stored`."""

    async def once_stored() -> list[frames.ServerFrame]:
        return frames_of(await stored)

    committed = asyncio.ensure_future(once_stored())
    return Storing(committed, None if shown is None else shown.future, asked)
