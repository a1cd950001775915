"""Bounded work on untrusted input: the one seam for parsing what users send
(attachments, imports) outside the serving process.

`run` (from async code) and `run_sync` (from a worker thread) run a module-level
function with picklable arguments and result in a worker process of its own,
under a `Budget` of wall time and memory, and in the caller's language. Over
budget, the process is killed and `Exhausted` raised (`TimedOut`,
`OutOfMemory`: their `message` is for the user). An awaiting task that is
cancelled (its requester went away) kills the process too. The work of one
`owner` (a user) waits behind its own, not in front of others' (`chat.work.pool`).
Exceptions the function raises reach the caller as they are (they must pickle).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from chat.work.budgets import Budget, Exhausted, OutOfMemory, TimedOut
from chat.work.pool import Pool, close, default

T = TypeVar("T")

logger = logging.getLogger(__name__)


async def run(func: Callable[..., T], /, *args: Any, owner: str, budget: Budget) -> T:
    """`func(*args)` in a worker process; cancelling the await kills it."""
    return await asyncio.wrap_future(default().submit(func, args, owner, budget))


def run_sync(func: Callable[..., T], /, *args: Any, owner: str, budget: Budget) -> T:
    """`func(*args)` in a worker process, waited for in this thread (not the
    event loop's: use `run` there)."""
    return default().submit(func, args, owner, budget).result()


def warm() -> None:
    """Start the fork server and the first workers now, in the background, not
    with the first file (it sets Django up: about 3 s). For a serving process
    (`chatsite.asgi`): it serves meanwhile."""
    threading.Thread(target=_warm, name="work-warm", daemon=True).start()


def _warm() -> None:
    budget = Budget(seconds=60, memory_bytes=64 * 1024 * 1024)
    try:
        default().submit(os.getpid, (), "", budget).result()
    except Exception:  # the first file reports what fails here
        logger.exception("the work processes could not be started ahead")


__all__ = [
    "Budget",
    "Exhausted",
    "OutOfMemory",
    "Pool",
    "TimedOut",
    "close",
    "run",
    "run_sync",
    "warm",
]
