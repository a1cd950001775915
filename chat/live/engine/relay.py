"""The hot path: each network read from the model server becomes at most one frame
per kind (thinking, content; and a turn with tools' call frames), written to
every attached socket before the next read. Nothing waits on a timer; deltas
are merged only when several arrive in one read (`Generation.apply`), which
happens exactly when we are behind. Nothing here touches the database: the
checkpoints (`chat.live.engine.checkpoints`) save the text.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any

from django.utils.translation import gettext as _

from chat.live.engine import first_token
from chat.live.engine.generation import Generation, send_all
from chat.live.engine.loop_state import client_for
from chat.live.engine.preload import Tell
from chat.models import ModelProfile
from chat.upstream import UpstreamError


async def relay(
    generation: Generation,
    profile: ModelProfile,
    history: list[dict[str, Any]],
    tell: Tell,
    ready: Awaitable[None] | None = None,
    asked: Callable[[], None] | None = None,
) -> None:
    """Stream the answer from the model server to the generation's sockets until
    it finished (raises `UpstreamError` when the stream ended early). `tell`
    reaches every socket of the conversation (the first-token watch's news).
    `ready`: the turn's announcement, which the first frame waits for (the
    request goes out before it, docs/latency.md, rule 8); `asked`, called once
    the request is written (`chat.live.engine.turn.early`)."""
    client = client_for(profile)
    if generation.upstream_at is None:  # a turn's later model calls keep the first's
        generation.upstream_at = time.perf_counter()
    watch = first_token.watch(generation, profile, tell)
    # A turn with tools offers them (`chat.live.engine.turn.tools`), but in
    # the call that follows the round limit; an API turn, the client's own.
    steps = generation.steps
    offered: dict[str, Any] = {} if steps is None else steps.offer()
    stream = client.chat(
        profile.tag,
        history,
        think=generation.think,
        options=generation.options or profile.request_options(generation.think),
        keep_alive=profile.keep_alive_value,
        asked=asked,
        **offered,
    )
    # aclosing: leaving the loop (done, stop, error) closes the upstream request,
    # which is how a model server learns to stop generating.
    publisher = generation.publisher
    if publisher is not None:
        pump = asyncio.create_task(publisher.run(), name="publish")
    try:
        async with aclosing(stream):
            async for events in stream:
                if ready is not None:  # once: the first read waits for it
                    await ready
                    ready = None
                for frame in generation.apply(events):
                    await send_all(generation.attached, frame)
                    if publisher is not None:
                        publisher.add(frame)
                if generation.finished is not None:
                    break
            if ready is not None:  # an empty stream: announced all the same
                await ready
    finally:
        watch.cancel()
        if publisher is not None:
            pump.cancel()
    if generation.finished is None:
        raise UpstreamError("stream_cut", _("The model server ended the answer early."))
