"""Blocking work from an async test, in a worker thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import connections

T = TypeVar("T")


async def in_thread(work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` in a thread of the loop's executor, its database connections
    closed after it. That thread dies with the test's event loop: a connection
    it left open would never go back to the pool (DATABASE_POOL), and a few
    dozen such tests used up the test process's pool."""

    def run() -> T:
        try:
            return work(*args)
        finally:
            connections.close_all()

    return await asyncio.to_thread(run)
