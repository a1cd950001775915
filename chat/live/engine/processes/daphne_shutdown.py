"""Under Daphne, the runner's shutdown runs before Twisted stops the loop: Daphne
has no ASGI lifespan events, so this is how the generations' final saves are
waited for when the server stops (`Runner.shutdown`)."""

from __future__ import annotations

import asyncio
import sys
from typing import Protocol


class Stoppable(Protocol):
    async def shutdown(self) -> None: ...


def stop_with_daphne(runner: Stoppable) -> None:
    """Under Daphne, run `runner.shutdown()` when the server stops."""
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is None or not getattr(reactor, "running", False):
        return
    from twisted.internet.defer import Deferred

    def before_shutdown() -> Deferred[None]:
        return Deferred.fromFuture(asyncio.ensure_future(runner.shutdown()))

    reactor.addSystemEventTrigger("before", "shutdown", before_shutdown)
