"""One socket's feed of one conversation: what the owner's socket
(`chat.sockets.consumers`) and a shared link's viewer (`chat.sockets.share_consumers`)
both hear.

A feed subscribes its socket to the runner of this process (answers streamed
here are sent to the socket directly) and joins it to the conversation's group
(answers streamed by other processes come as channel-layer events, see
`chat.live.engine.processes.fanout`). It resumes an answer the page has part of, from
the runner
when it runs here, by a catch-up request when it runs elsewhere, or from the
store when it ended. The socket decides what its user may ask and how frames
are written (`Socket.send_frame`).
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from channels.db import database_sync_to_async
from django.utils.translation import gettext as _

from chat.live.engine import control
from chat.live.engine.generation import Sink
from chat.live.engine.processes import layer
from chat.live.engine.processes.fanout import Held, RemoteView
from chat.live.engine.runner import runner
from chat.live.protocol import frames
from chat.live.protocol.channel_events import (
    CatchupEvent,
    DeltaEvent,
    FrameEvent,
    StepItem,
    StepsEvent,
    TextItem,
    conversation_group,
)
from chat.models import Message

# How long a catch-up request waits for its reply before it is asked again
# (the request or the reply can be lost while Redis restarts).
CATCHUP_SECONDS = 2.0


class Socket(Sink, Protocol):
    """The consumer a feed writes to: the runner's `Sink`, with a channel."""

    channel_name: str


class Feed:
    def __init__(self, socket: Socket, conversation_id: int) -> None:
        self.socket = socket
        self.conversation_id = conversation_id
        # Answers streamed by other processes, by message id.
        self.remote: dict[int, RemoteView] = {}
        # Catch-ups waiting for their reply, by message id (`ask_catchup`).
        self.catchups: dict[int, asyncio.Task[None]] = {}
        # Answers streamed elsewhere whose resume was refused (`bad_offset`):
        # none of their text is sent here until the page resumes them again
        # (their next deltas would land after text the page wrongly holds, or
        # a catch-up from their start after it); their end still comes.
        self.refused: set[int] = set()

    @property
    def group(self) -> str:
        return conversation_group(self.conversation_id)

    async def open(self) -> None:
        await runner.ensure_started()
        runner.subscribe(self.conversation_id, self.socket)
        # Without it only other processes' answers are missed (and `join`
        # retries it): the socket stays.
        await layer.join(self.group, self.socket.channel_name)

    def close(self) -> None:
        """On disconnect (the socket leaves its groups itself)."""
        for task in self.catchups.values():
            task.cancel()
        self.unsubscribe()

    def unsubscribe(self) -> None:
        """No answer streamed here reaches the socket any more."""
        runner.unsubscribe(self.conversation_id, self.socket)

    def follows(self, message_id: int) -> bool:
        """Whether the answer runs here and the socket is sent its every delta."""
        generation = runner.generation(self.conversation_id)
        return (
            generation is not None
            and generation.message_id == message_id
            and self.socket in generation.attached
        )

    async def resume(self, message_id: int, offset: int, thinking_offset: int) -> None:
        """Send what the page misses of a message after the offsets it has."""
        self.refused.discard(message_id)
        resumed = await runner.resume(
            self.socket,
            message_id,
            offset,
            thinking_offset,
            conversation_id=self.conversation_id,
        )
        if resumed:
            return
        # Not running here (any more): the stored message is the whole truth.
        message = await self._stored(message_id)
        if message is None:
            await self.socket.send_frame(
                frames.error(
                    None, "not_found", _("That message is not in this conversation.")
                )
            )
        elif message.status == Message.Status.STREAMING and message.pk in self.remote:
            # Followed already (from its start, or a catch-up is on its way):
            # what the page has counts, and nothing is sent twice.
            have = self.remote[message.pk].have
            have["thinking"] = max(have["thinking"], thinking_offset)
            have["content"] = max(have["content"], offset)
        elif message.status == Message.Status.STREAMING:
            # Running on another process: it answers with a catch-up event. If
            # that process died, the orphan sweep sends the stored message.
            view = RemoteView(thinking_offset, offset)
            self.remote[message.pk] = view
            await self.ask_catchup(message.pk, view)
        else:
            await self.send_stored(message)

    async def _stored(self, message_id: int) -> Message | None:
        """The message as stored, if it is one this conversation shows."""
        shown = Message.shown.filter(
            pk=message_id, conversation_id=self.conversation_id
        ).prefetch_related("attachments")
        return await database_sync_to_async(shown.first)()

    async def send_stored(self, message: Message) -> None:
        await database_sync_to_async(message.place_among_versions)()
        await self.socket.send_frame(frames.message(message))

    # Channel-layer events from other processes (this process's own are skipped:
    # its sockets were sent the same frames directly).

    async def on_frame(self, event: FrameEvent) -> None:
        if event["origin"] == runner.id:
            return
        for frame in event["frames"]:
            if frame["type"] == "start":
                self.remote[frame["message_id"]] = RemoteView()
            elif frame["type"] == "message":
                self.remote.pop(frame["message"]["id"], None)
                self.refused.discard(frame["message"]["id"])
            elif frame["type"] == "removed":  # a turn taken back, or replaced
                for message_id in frame["message_ids"]:
                    self.remote.pop(message_id, None)
            await self.socket.send_frame(frame)

    async def on_delta(self, event: DeltaEvent) -> None:
        if event["origin"] == runner.id:
            return
        message_id = event["message_id"]
        if message_id in self.refused:
            return
        view = self.remote.setdefault(message_id, RemoteView())
        delta = (event["kind"], event["start"], event["text"], event.get("tokens", 1))
        if view.resuming:
            view.held.append(delta)  # sent after the catch-up, by offset
            return
        await self.take(message_id, view, [delta])

    async def on_steps(self, event: StepsEvent) -> None:
        """A turn with tools' frames and text, in order (`fanout.Publisher`)."""
        if event["origin"] == runner.id:
            return
        message_id = event["message_id"]
        if message_id in self.refused:
            return
        view = self.remote.setdefault(message_id, RemoteView())
        items = _held(event["items"])
        if view.resuming:
            view.held.extend(items)
            return
        await self.take(message_id, view, items)

    async def on_catchup(self, event: CatchupEvent) -> None:
        message_id = event["message_id"]
        if "refused" in event:  # a resume from beyond the text
            self.remote.pop(message_id, None)
            self.refused.add(message_id)
            await self.socket.send_frame(event["refused"])
            return
        view = self.remote.setdefault(message_id, RemoteView())
        if view.resuming:  # not a retried request's second reply
            await self.socket.send_frame(event["start"])
            if event.get("queued"):
                await self.socket.send_frame(event["queued"])
        view.resuming = False
        view.caught.set()
        held, view.held = view.held, []
        # A catch-up's text came from the stored checkpoint, counted as one
        # token: the page estimates a checkpoint's tokens itself.
        caught: list[Held] = [
            ("thinking", *event["thinking"], 1),
            ("content", *event["content"], 1),
        ]
        if "steps" in event:
            # A turn with tools: its text and steps after the offsets, in
            # order (each step shown: the owner sent what this socket misses).
            caught.extend(_held(event["steps"]))
            await self.take(message_id, view, caught)
            view.caught_up(event.get("steps_version", 0))
            caught = []
        await self.take(message_id, view, [*caught, *held])

    async def take(self, message_id: int, view: RemoteView, held: list[Held]) -> None:
        """Send what is new in `held`; at a gap (text or a step missing here:
        joined mid-answer, or events lost while Redis was away), hold the rest
        and ask for a catch-up."""
        for i, item in enumerate(held):
            if isinstance(item, dict):  # a step's frame (`Feed.on_steps`)
                show = view.step(item)
                if show is None:
                    view.held = held[i:]
                    await self.ask_catchup(message_id, view)
                    return
                if show:
                    await self.socket.send_frame(item["frame"])
                continue
            kind, start, text, tokens = item
            new = view.take(kind, start, text)
            if new is None:
                view.held = held[i:]
                await self.ask_catchup(message_id, view)
                return
            if new:
                if len(new) < len(text):  # partly seen: its share of the tokens
                    tokens = max(1, round(tokens * len(new) / len(text)))
                await self.socket.send_frame(
                    frames.delta(kind, message_id, new, tokens)
                )

    async def ask_catchup(self, message_id: int, view: RemoteView) -> None:
        """Ask the answer's process for what this socket misses, again every
        CATCHUP_SECONDS until it replies (the request or its reply can be lost),
        or until the stored answer shows it ended."""
        view.resuming = True
        waiting = self.catchups.pop(message_id, None)
        if waiting is not None:
            waiting.cancel()  # it waited for an older request
        task = asyncio.create_task(self.await_catchup(message_id, view))
        self.catchups[message_id] = task

    async def await_catchup(self, message_id: int, view: RemoteView) -> None:
        while view.resuming and self.remote.get(message_id) is view:
            offsets = (view.have["thinking"], view.have["content"])
            view.caught.clear()
            await control.request_resume(
                self.conversation_id,
                message_id,
                offsets,
                self.socket.channel_name,
                view.steps_version,
            )
            try:
                async with asyncio.timeout(CATCHUP_SECONDS):
                    await view.caught.wait()
                return
            except TimeoutError:
                pass
            message = await self._stored(message_id)
            if message is None or message.status != Message.Status.STREAMING:
                # It ended meanwhile, and its final frames were lost.
                if self.remote.get(message_id) is view:
                    del self.remote[message_id]
                    if message is not None:
                        await self.send_stored(message)
                return


def _held(items: list[TextItem | StepItem]) -> list[Held]:
    """A turn's items (`chat.steps`, a catch-up's `steps`) as a view holds them."""
    held: list[Held] = []
    for item in items:
        if "frame" in item:
            held.append(item)
        else:
            held.append((item["kind"], item["start"], item["text"], item["tokens"]))
    return held
