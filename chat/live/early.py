"""The model server is asked first (docs/latency.md, rule 8): a turn is stored
in the database thread, which says the moment its answer is admitted, before
the commit. The caller then starts the answer at once (`Runner.start`, with
`stored`) while the thread writes the rest and commits; a commit that fails
closes the upstream request (`Runner._ask_while_storing`).

Used by the conversation's socket (`chat.sockets.consumers`) and the API
(`chat.api.answers`) alike (rule 9).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeVar

from channels.db import database_sync_to_async

from chat.live import frames

T = TypeVar("T")
R = TypeVar("R")


async def store(
    begin: Callable[[Callable[[T], None]], R],
) -> tuple[asyncio.Task[R], T | None]:
    """Run `begin(admitted)` in the database thread; `begin` calls `admitted`
    (from that thread) once the answer holds a slot, before its commit.

    Returns the task of the whole store and what `admitted` was given, or None
    when the store ended first (refused, failed, or its answer waits for a
    slot): the task is then done, with its result or its error."""
    loop = asyncio.get_running_loop()
    early: asyncio.Future[T] = loop.create_future()

    def admitted(value: T) -> None:
        loop.call_soon_threadsafe(early.set_result, value)
        # The loop thread needs the GIL to ask the model server, and this
        # thread would keep it through the rows' Python (up to the 5 ms switch
        # interval): it is given up here.
        time.sleep(0.0001)

    stored = asyncio.ensure_future(database_sync_to_async(begin)(admitted))
    # `admitted` is scheduled on the loop before the thread's result is: when
    # both happened, `early` is done first.
    either: list[asyncio.Future[Any]] = [stored, early]
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    return stored, early.result() if early.done() else None


def told(
    stored: asyncio.Task[R], frames_of: Callable[[R], list[frames.ServerFrame]]
) -> asyncio.Future[list[frames.ServerFrame]]:
    """What the turn's viewers are told once `stored` committed (`frames_of`
    its result); its error if the commit failed (`Runner.start`, `stored`)."""

    async def once_stored() -> list[frames.ServerFrame]:
        return frames_of(await stored)

    return asyncio.ensure_future(once_stored())
