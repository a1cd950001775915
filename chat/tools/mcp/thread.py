"""The MCP client's own event loop, on a thread of its own, one per site
process.

Every MCP connection lives here, whichever loop asks: a stdio server's
process and session are bound to the loop that started them (asyncio's
pipes, anyio's streams), and there is one of them per server per site
process however many loops the process runs (Daphne's, the tests'). What
a server sends is read here too; a message too large to parse without
holding the GIL for long goes on to a worker process
(`chat.tools.mcp.messages`)."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

_T = TypeVar("_T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
# Run on the loop before it stops (the stdio servers' shutdown).
_on_stop: list[Callable[[], Coroutine[Any, Any, None]]] = []


def tools_loop() -> asyncio.AbstractEventLoop:
    """The loop, started on first use."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="mcp-tools", daemon=True
            ).start()
            _loop = loop
            atexit.register(stop)
        return _loop


async def on_tools_loop(work: Coroutine[Any, Any, _T]) -> _T:
    """`work`'s result, run on the tools loop. Cancelling the caller cancels
    `work` there (and returns at once: `work` winds down on its own loop)."""
    future = asyncio.run_coroutine_threadsafe(work, tools_loop())
    return await asyncio.wrap_future(future)


def when_stopping(cleanup: Callable[[], Coroutine[Any, Any, None]]) -> None:
    _on_stop.append(cleanup)


def stop(timeout: float = 10.0) -> None:
    """Run the cleanups (stop the stdio servers) and stop the loop; at the
    process's exit, or by a test."""
    global _loop
    with _lock:
        loop, _loop = _loop, None
    if loop is None:
        return

    async def cleanups() -> None:
        await asyncio.gather(
            *(cleanup() for cleanup in _on_stop), return_exceptions=True
        )

    # Shutting down: a cleanup that fails or hangs has nobody left to tell.
    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(cleanups(), loop).result(timeout)
    loop.call_soon_threadsafe(loop.stop)
