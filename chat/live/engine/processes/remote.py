"""Requests between processes for an answer one of them runs (the runner's side).

A socket on one process may ask to stop an answer another process runs, ask
it for the text (and a turn's steps) its viewer misses, or answer a tool call
that awaits the user's approval there. The request goes to the answer's generation
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
from chat.live.engine.turn.steps import Replay
from chat.live.protocol.channel_events import (
    Catchup,
    CatchupRefused,
    ChannelEvent,
    GenerationApprove,
    GenerationResume,
    GenerationStop,
    StepItem,
    TextItem,
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
    steps_version: int = 0,
) -> None:
    resume: GenerationResume = {
        "type": "generation.resume",
        "conversation_id": conversation_id,
        "message_id": message_id,
        "thinking_offset": offsets[0],
        "offset": offsets[1],
        "reply_to": reply_to,
        "steps_version": steps_version,
    }
    await group_send(channel_layer, generation_group(conversation_id), resume)


async def ask_approve(
    channel_layer: BaseChannelLayer | None, decision: GenerationApprove
) -> None:
    group = generation_group(decision["conversation_id"])
    await group_send(channel_layer, group, decision)


def answer_approve(generation: Generation | None, decision: GenerationApprove) -> None:
    """The user's decision on a call of `generation` awaiting approval, if it
    is the answer asked about and the user owns it (a socket checked that
    already; checked here too, as the event may come from any process). A
    call that no longer waits (decided already, from another tab) is left."""
    if generation is None or generation.message_id != decision["message_id"]:
        return
    steps = generation.steps
    if steps is None or steps.owner_id != decision["user_id"]:
        if steps is not None:
            logger.warning(
                "user %s may not approve answer %s's calls",
                decision["user_id"],
                generation.message_id,
            )
        return
    steps.decide(decision["call_id"], decision["allow"])


async def listen(
    channel_layer: BaseChannelLayer,
    channel: str,
    stop: Callable[[int], object],
    resume: Callable[[GenerationResume], Awaitable[None]],
    approve: Callable[[GenerationApprove], object],
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
        elif event.get("type") == "generation.approve":
            approve(cast(GenerationApprove, event))


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
    if generation.steps is not None:
        catchup["thinking"] = (event["thinking_offset"], "")
        catchup["content"] = (event["offset"], "")
        catchup["steps"] = _steps(generation, event)
        catchup["steps_version"] = generation.steps.version
    await layer.send(event["reply_to"], catchup)


def _steps(
    generation: Generation, event: GenerationResume
) -> list[TextItem | StepItem]:
    """A turn's text and steps after the socket's offsets, in order, as one
    pass of the catch-up a socket of this process gets (`Replay`): exact, as
    the steps' state in memory is exactly what the frames published so far
    (or still to publish, then dropped by their `version`) tell. The stored
    checkpoint would be up to a second behind them."""
    assert generation.steps is not None
    at = [event["thinking_offset"], event["offset"]]
    replay = Replay(generation.steps, at[0], at[1], since=event.get("steps_version", 0))
    items: list[TextItem | StepItem] = []
    frames = replay.frames(generation.message_id, generation.tail, generation.lengths())
    for frame in frames:
        if frame["type"] == "thinking" or frame["type"] == "content":
            i = 0 if frame["type"] == "thinking" else 1
            text = frame["delta"]
            items.append(TextItem(kind=frame["type"], start=at[i], text=text, tokens=1))
            at[i] += len(text)
        else:
            items.append(StepItem(frame=frame, version=None, since=0, at=(0, 0)))
    return items
