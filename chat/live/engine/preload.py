"""Loading a model before the question comes, and knowing when one is loading.

When a user opens a conversation or starts typing, the browser sends
`{"type": "preload"}`. For an Ollama profile the `Preloader` asks the server to
load the model (a chat with no messages, with the same options as a real chat so
the answer does not load it again), at most once per profile every
`PRELOAD_EVERY` seconds per process (per event loop: see below), and tells the
conversation's sockets `model` frames: "loading" (only when `/api/ps` does not
list the model), then "ready" with the load time, or "error" with why.
OpenAI-compatible servers load their model at start: nothing to do.

`Preloader.model_listed` and `Preloader.running` tell the first-token watch
(`chat.live.engine.first_token`) whether an answer is waiting for a model to load.

A `Preloader` holds one event loop's loads and `/api/ps` answers: each loop's
`chat.live.engine.loop_state.LoopState` has one, closed with it at shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.utils.translation import gettext as _

from chat.live.protocol import frames
from chat.models import ModelProfile
from chat.upstream import ClientPool, UpstreamError

logger = logging.getLogger(__name__)

PRELOAD_EVERY = 60.0
# /api/ps answers from memory: a slow answer means a busy or distant server.
PS_TIMEOUT = 2.0

# Sends a frame to every socket of a conversation (`Runner.broadcast`).
Tell = Callable[[int, frames.ModelFrame], Awaitable[None]]


# Answers starting together share one /api/ps request per server, and a model
# seen loaded is taken as loaded for PS_FRESH seconds. "Not loaded" is never
# reused: a load in progress is polled for its end.
PS_FRESH = 1.0


@dataclass(eq=False)
class _Ask:
    at: float
    task: asyncio.Task[set[str] | None]


@dataclass(eq=False)
class Load:
    """One running preload of one profile's model."""

    model: str
    conversations: set[int]
    started: float = field(default_factory=time.perf_counter)
    task: asyncio.Task[None] | None = None
    cold: bool | None = None  # None until /api/ps said whether it was loaded
    load_ms: float | None = None

    def done(self) -> bool:
        return self.task is None or self.task.done()


class Preloader:
    """One event loop's preloads and `/api/ps` answers (see
    `chat.live.engine.loop_state`)."""

    def __init__(self, clients: ClientPool) -> None:
        self._clients = clients
        self._loads: dict[int, Load] = {}
        self._recent: dict[int, float] = {}  # profile id -> when last preloaded
        self._asks: dict[str, _Ask] = {}  # base URL -> its last /api/ps request

    def running(self, profile: ModelProfile) -> Load | None:
        """The preload of `profile`'s model still under way, if any."""
        load = self._loads.get(profile.pk)
        if load is None or load.task is None or load.task.done():
            return None
        return load

    def tasks(self) -> list[asyncio.Task[Any]]:
        """The loads and /api/ps requests still running."""
        tasks: list[asyncio.Task[Any]] = [ask.task for ask in self._asks.values()]
        tasks += [load.task for load in self._loads.values() if load.task is not None]
        return [task for task in tasks if not task.done()]

    async def aclose(self, grace: float) -> None:
        """Cancel the loads and /api/ps requests still running (at shutdown), and
        wait up to `grace` seconds for them to end."""
        running = self.tasks()
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running, timeout=grace)

    async def model_listed(self, profile: ModelProfile) -> bool | None:
        """Whether Ollama's `/api/ps` lists the profile's model as loaded; None
        when that cannot be known (not Ollama, or the server did not say)."""
        if profile.backend != ModelProfile.Backend.OLLAMA:
            return None
        names = await self._running_models(profile.base_url.rstrip("/"), profile.tag)
        return None if names is None else profile.tag in names

    async def _running_models(self, base_url: str, tag: str) -> set[str] | None:
        """The models `/api/ps` lists: an answer already asked for (or one that
        listed `tag` less than PS_FRESH ago) is shared."""
        ask, now = self._asks.get(base_url), time.perf_counter()
        if ask is not None and ask.task.done():
            names = ask.task.result()
            if names is None or tag not in names or now - ask.at > PS_FRESH:
                ask = None
        if ask is None:
            task = asyncio.create_task(self._ask_ps(base_url), name="api-ps")
            ask = self._asks[base_url] = _Ask(now, task)
        # Shielded: one answer ending does not cancel the request the others await.
        return await asyncio.shield(ask.task)

    async def _ask_ps(self, base_url: str) -> set[str] | None:
        try:
            response = await self._clients.http(base_url).get(
                base_url + "/api/ps", timeout=PS_TIMEOUT
            )
            ok = response.status_code == 200
            models = response.json().get("models") if ok else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        if not isinstance(models, list):
            return None
        return {
            name
            for m in models
            if isinstance(m, dict) and isinstance(name := m.get("name"), str)
        }

    async def request(
        self, profile: ModelProfile, conversation_id: int, tell: Tell
    ) -> Load | None:
        """Start loading `profile`'s model unless it was asked for lately; return
        the load that `conversation_id` now hears about, if any."""
        load = self.running(profile)
        if load is not None:
            load.conversations.add(conversation_id)
            await tell(conversation_id, frames.model_state("loading", profile.tag))
            return load
        if profile.backend != ModelProfile.Backend.OLLAMA:
            return None
        now = time.monotonic()
        last = self._recent.get(profile.pk)
        if last is not None and now - last < PRELOAD_EVERY:
            return None
        self._recent[profile.pk] = now
        load = Load(profile.tag, {conversation_id})
        self._loads[profile.pk] = load
        load.task = asyncio.create_task(
            self._load(profile, load, tell), name=f"preload-{profile.pk}"
        )
        return load

    async def _load(self, profile: ModelProfile, load: Load, tell: Tell) -> None:
        async def tell_all(frame: frames.ModelFrame) -> None:
            for conversation_id in list(load.conversations):
                await tell(conversation_id, frame)

        try:
            # Not listed: loading. Unknown (no answer): the load will tell.
            load.cold = await self.model_listed(profile) is False
            if load.cold:
                await tell_all(frames.model_state("loading", profile.tag))
            started = time.perf_counter()
            await self._clients.ollama(profile.base_url).load(
                profile.tag,
                profile.keep_alive_value,
                options=profile.request_options(),
            )
            load.load_ms = round((time.perf_counter() - started) * 1000, 3)
            final = frames.model_state("ready", profile.tag, load_ms=load.load_ms)
        except UpstreamError as exc:
            # Asked again on the next preload, not in a minute.
            self._recent.pop(profile.pk, None)
            logger.warning("preload of %s failed: %s", profile.tag, exc.detail)
            detail = _("The model could not be loaded: %(error)s") % {
                "error": exc.detail
            }
            final = frames.model_state("error", profile.tag, detail=detail)
        finally:
            # Over before it is told: a preload asked from now on starts anew.
            if self._loads.get(profile.pk) is load:
                del self._loads[profile.pk]
        await tell_all(final)
