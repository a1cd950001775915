"""Requests between processes for an answer one of them runs (the runner's side).

A socket on one process may ask to stop an answer another process runs, or ask
it for the text its viewer misses. The request goes to the answer's generation
group (`chat.live.protocol.channel_events.generation_group`), which holds the runner
channel of
the process that runs it; that process's listener (`listen`) answers. Pages and
sockets ask through `chat.live.engine.control`; the runner holds what is asked about.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import NoReturn, cast

from channels.layers import BaseChannelLayer

from chat.live.engine.generation import Generation
from chat.live.engine.processes import fanout, layer
from chat.live.protocol.channel_events import (
    Catchup,
    CatchupRefused,
    ChannelEvent,
    GenerationResume,
    GenerationStop,
    generation_group,
)

logger = logging.getLogger(__name__)


async def group_send(
    channel_layer: BaseChannelLayer | None, group: str, event: ChannelEvent
) -> None:
    """Send to `group` when there are other processes to tell."""
    if fanout.spans_processes(channel_layer):
        await layer.group_send(group, event)


async def ask_stop(
    channel_layer: BaseChannelLayer | None, conversation_id: int
) -> None:
    stop: GenerationStop = {
        "type": "generation.stop",
        "conversation_id": conversation_id,
    }
    await group_send(channel_layer, generation_group(conversation_id), stop)


async def ask_resume(
    channel_layer: BaseChannelLayer | None,
    conversation_id: int,
    message_id: int,
    offsets: tuple[int, int],
    reply_to: str,
) -> None:
    resume: GenerationResume = {
        "type": "generation.resume",
        "conversation_id": conversation_id,
        "message_id": message_id,
        "thinking_offset": offsets[0],
        "offset": offsets[1],
        "reply_to": reply_to,
    }
    await group_send(channel_layer, generation_group(conversation_id), resume)


async def listen(
    channel_layer: BaseChannelLayer,
    channel: str,
    stop: Callable[[int], object],
    resume: Callable[[GenerationResume], Awaitable[None]],
) -> NoReturn:
    """Answer the requests sent to this process's runner `channel`, for ever."""
    task = asyncio.current_task()
    while True:
        try:
            event = await channel_layer.receive(channel)
        except asyncio.CancelledError:
            raise
        except Exception:
            if task is not None and task.cancelling():
                # Shutting down (`LoopState.end_tasks` broke a lost cancel's read).
                raise asyncio.CancelledError from None
            logger.warning("channel layer receive failed", exc_info=True)
            await asyncio.sleep(1)
            continue
        if event.get("type") == "generation.stop":
            stop(event["conversation_id"])
        elif event.get("type") == "generation.resume":
            await resume(cast(GenerationResume, event))


async def answer_resume(
    generation: Generation | None, event: GenerationResume, origin: str
) -> None:
    """Send the asking socket (`reply_to`) the text after its offsets, if
    `generation` is the answer it asked about."""
    if generation is None or generation.message_id != event["message_id"]:
        return
    refusal = generation.past_the_text(event["thinking_offset"], event["offset"])
    if refusal is not None:
        reply: CatchupRefused = {
            "type": "chat.catchup",
            "message_id": generation.message_id,
            "refused": refusal,
        }
        await layer.send(event["reply_to"], reply)
        return
    catchup: Catchup = {
        "type": "chat.catchup",
        "origin": origin,
        "start": generation.start_frame(),
        "message_id": generation.message_id,
        "thinking": (
            event["thinking_offset"],
            generation.tail("thinking", event["thinking_offset"]),
        ),
        "content": (event["offset"], generation.tail("content", event["offset"])),
    }
    queued = generation.queued_frame()
    if queued is not None:
        catchup["queued"] = queued
    await layer.send(event["reply_to"], catchup)
