"""The first-token limit: a watch beside each generation until its first token.

An answer that gets no first token within its profile's `first_token_timeout`
fails with `upstream_timeout` (the question stays stored). A model that is still
loading is not a fault: the watch tells the conversation "loading model", waits
for the load (up to `LOAD_LIMIT`), records how long it took, and only then starts
the limit. A load is known from a preload still running (`chat.live.engine.preload`),
or from
Ollama's `/api/ps` not listing the model when the answer starts, and is over when
the preload ends or `/api/ps` lists the model.

The watch is a task of its own that sleeps until the next deadline: nothing of it
runs on the relay's per-token path, and it ends with the first token.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Protocol

from django.utils.translation import gettext as _

from chat.live.engine import loop_state
from chat.live.engine.preload import Preloader, Tell
from chat.live.protocol import frames
from chat.upstream import UpstreamError

if TYPE_CHECKING:
    from chat.models import ModelProfile

# Large models from a slow disk take minutes; longer than this is a fault. (The
# pooled client's read timeout, UPSTREAM_FIRST_TOKEN_TIMEOUT, also bounds a load
# during which Ollama sends nothing: raise it with this for very slow loads.)
LOAD_LIMIT = 600.0
# How often /api/ps is asked whether a load started by the answer is over.
LOAD_POLL = 0.25


class Watched(Protocol):
    """What the watch reads of a generation (`chat.live.engine.generation`), and tells
    it."""

    @property
    def conversation_id(self) -> int: ...
    @property
    def message_id(self) -> int: ...
    @property
    def upstream_at(self) -> float | None: ...
    def awaits_first_token(self) -> bool: ...
    def loaded(self, ms: float) -> None: ...
    def fail(self, error: UpstreamError) -> None: ...


def watch(generation: Watched, profile: ModelProfile, tell: Tell) -> asyncio.Task[None]:
    """Start watching `generation`, run by the current task; cancel the watch when
    the relay ends."""
    relay = asyncio.current_task()
    assert relay is not None
    return asyncio.create_task(
        _watch(generation, profile, relay, tell),
        name=f"first-token-{generation.message_id}",
    )


async def _watch(
    generation: Watched,
    profile: ModelProfile,
    relay: asyncio.Task[None],
    tell: Tell,
) -> None:
    started = generation.upstream_at or time.perf_counter()
    preloads = loop_state.current().preloads
    load = preloads.running(profile)
    if load is not None and load.cold is False:
        load = None  # a preload of a model already loaded: nothing to wait for
    if load is None and await preloads.model_listed(profile) is not False:
        await _limit(generation, profile, relay, started)
        return
    if not generation.awaits_first_token():
        return
    conversation_id = generation.conversation_id
    await tell(conversation_id, frames.model_state("loading", profile.tag))
    if not await _load_ended(generation, profile, preloads, started):
        if generation.awaits_first_token():
            detail = _(
                "The model %(model)s did not finish loading within %(limit)s s. "
                "Your question is kept: try again later, or ask an admin to check "
                "the model server."
            ) % {"model": profile.tag, "limit": f"{LOAD_LIMIT:g}"}
            _fail(generation, relay, detail)
        return
    if not generation.awaits_first_token():
        # The answer began before we saw the load end: the text itself says
        # the model is ready, and only the server knows how long it loaded.
        return
    loaded = time.perf_counter()
    load_ms = round((loaded - started) * 1000, 3)
    generation.loaded(load_ms)
    ready = frames.model_state("ready", profile.tag, load_ms=load_ms)
    await tell(conversation_id, ready)
    await _limit(generation, profile, relay, loaded)


async def _load_ended(
    generation: Watched, profile: ModelProfile, preloads: Preloader, started: float
) -> bool:
    """Wait until the model is loaded (or the first token came); False when the
    load took longer than LOAD_LIMIT."""
    deadline = started + LOAD_LIMIT
    while generation.awaits_first_token():
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            return False
        load = preloads.running(profile)
        if load is not None:
            assert load.task is not None
            await asyncio.wait([load.task], timeout=min(remaining, LOAD_LIMIT))
            continue
        if await preloads.model_listed(profile) is not False:
            return True
        await asyncio.sleep(min(LOAD_POLL, remaining))
    return True


async def _limit(
    generation: Watched,
    profile: ModelProfile,
    relay: asyncio.Task[None],
    since: float,
) -> None:
    deadline = since + profile.first_token_timeout
    while generation.awaits_first_token():
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            detail = _(
                "The model %(model)s sent no first token within %(limit)s s. Your "
                "question is kept: try again, or ask an admin to raise the model's "
                "first-token limit."
            ) % {"model": profile.tag, "limit": profile.first_token_timeout}
            _fail(generation, relay, detail)
            return
        await asyncio.sleep(remaining)


def _fail(generation: Watched, relay: asyncio.Task[None], detail: str) -> None:
    generation.fail(UpstreamError("upstream_timeout", detail))
    relay.cancel()
