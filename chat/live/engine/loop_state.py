"""Everything that belongs to one event loop, in one object.

A served process runs one event loop for its whole life; tests run one per test.
What is bound to a loop (the channel layer as the runner uses it, the runner's
channel and its own tasks, the preloads and their `/api/ps` answers, the pooled
model-server clients, whose sockets belong to the loop that opened them) lives
in that loop's `LoopState`: made in one place (`current`, the first time the loop
asks), closed in one place (`close`, called by
`chat.live.engine.runner.Runner.shutdown`).
A new loop simply gets a new state; nothing else asks "is this a new loop?".

Per process rather than per loop, and so not here: the markdown helper process
(`chat.rendering.markdown`), the health check's database threads
(`chat.ops.health`), the status panel's rate samples (`chat.live.engine.server_status`)
and the wanted group memberships (`chat.live.engine.processes.layer.memberships`, plain
names).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from channels.layers import BaseChannelLayer, get_channel_layer

from chat.live.engine.preload import Preloader
from chat.models import ModelProfile
from chat.upstream import ClientPool, OllamaClient, OpenAIClient

logger = logging.getLogger(__name__)

# How long a shutdown waits for cancelled preloads and /api/ps requests.
PRELOADS_END_SECONDS = 2.0
END_SECONDS = 2.0  # for the runner's own tasks to end once cancelled
# A cancelled task ends at its next step: one still running after this is in a
# blocking Redis read that lost the cancel (see `LoopState.end_tasks`).
CANCEL_GRACE_SECONDS = 0.1


class LoopState:
    """One event loop's state. The runner's fields are set by
    `Runner.ensure_started`; `aclose` (from `Runner.shutdown`) ends them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        # The process's layer, looked up once per loop; what the runner sends
        # other processes and listens on.
        self.layer: BaseChannelLayer | None = get_channel_layer()
        self.started = False  # `Runner.ensure_started` ran in this loop
        self.channel: str | None = None  # the runner's, when the layer spans processes
        self.tasks: list[asyncio.Task[None]] = []  # the runner's own: sweep, listen...
        self.checkpoints: asyncio.Task[None] | None = None  # the runner's writer
        self.clients = ClientPool()
        self.preloads = Preloader(self.clients)

    async def aclose(self) -> None:
        """End the runner's own tasks, cancel the preloads still running, then
        close the model-server clients."""
        await self.end_tasks()
        await self.preloads.aclose(PRELOADS_END_SECONDS)
        await self.clients.aclose()

    async def end_tasks(self) -> None:
        """Cancel the runner's own tasks and wait for them. The listener's
        blocking Redis read can lose a cancellation (redis-py under a read
        timeout, then channels-redis' pop loop goes on): closing the layer's
        connections ends that read, and the listener then sees it is being
        cancelled. It is closed as soon as a task is seen not to end at once,
        not after END_SECONDS: every stop of a process (and every test) would
        wait those seconds for nothing."""
        own = [t for t in (*self.tasks, self.checkpoints) if t is not None]
        if not own:
            return
        for task in own:
            task.cancel()
        _, pending = await asyncio.wait(own, timeout=CANCEL_GRACE_SECONDS)
        close_pools = getattr(self.layer, "close_pools", None)
        if pending and close_pools is not None:
            logger.warning("a task ignored its cancel: closing the layer's connections")
            with contextlib.suppress(Exception):
                await close_pools()
            await asyncio.wait(pending, timeout=END_SECONDS)


_states: dict[asyncio.AbstractEventLoop, LoopState] = {}


def current() -> LoopState:
    """The running loop's state, made on first use. Raises `RuntimeError` when no
    event loop is running."""
    loop = asyncio.get_running_loop()
    state = _states.get(loop)
    if state is None:
        _forget_closed_loops()
        state = _states[loop] = LoopState(loop)
    return state


def existing() -> LoopState | None:
    """The running loop's state if it has one (without making one)."""
    return _states.get(asyncio.get_running_loop())


async def close() -> None:
    """Close the running loop's state and forget it (`Runner.shutdown`): the next
    use in this loop starts a new one."""
    state = _states.pop(asyncio.get_running_loop(), None)
    if state is not None:
        await state.aclose()


def clients() -> ClientPool:
    """The running loop's model-server clients."""
    return current().clients


def client_for(profile: ModelProfile) -> OllamaClient | OpenAIClient:
    """The client that speaks `profile`'s backend, over the running loop's pool."""
    return current().clients.client_for(**profile.server_settings())


def _forget_closed_loops() -> None:
    # Their tasks never run again and their sockets cannot be closed without
    # their loop; dropping them frees them.
    for loop in [loop for loop in _states if loop.is_closed()]:
        del _states[loop]
