"""The conversation socket: validates frames and hands work to the runner.

The protocol is documented in `chat.live.frames`. The socket does not own the
generation (see `chat.live.runner`): disconnecting only unsubscribes.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.db import DatabaseError, transaction

from chat.live import admission, frames, layer, loop_state
from chat.live.fanout import Kind, RemoteView, conversation_group
from chat.live.ratelimit import CLOSE_RATE_LIMITED, FrameLimiter, Verdict
from chat.live.runner import runner
from chat.live.session_sockets import SessionBound
from chat.models import Conversation, Message, ModelProfile, Retry, Turn

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
# How long a catch-up request waits for its reply before it is asked again
# (the request or the reply can be lost while Redis restarts).
CATCHUP_SECONDS = 2.0

# A refused turn's error code, by the model's exception.
REFUSALS: dict[type[Exception], str] = {
    Conversation.NoModel: "no_model",
    Conversation.Busy: "busy",
    Conversation.NothingToRegenerate: "nothing_to_regenerate",
    Conversation.NotLastQuestion: "not_last_question",
}


NOT_STORED = "Your message could not be saved: nothing was sent. Try again."


class ChatConsumer(SessionBound, AsyncWebsocketConsumer):
    conversation_id: int
    # Answers streamed by other processes, by message id (see `chat.live.fanout`).
    remote: dict[int, RemoteView]
    limiter: FrameLimiter
    left: bool = False  # `disconnect` ran
    # Catch-ups waiting for their reply, by message id (`ask_catchup`).
    catchups: dict[int, asyncio.Task[None]]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """However the socket ends (a crashed handler, a cancel), it leaves the
        runner and its groups: `disconnect` only runs on a clean close."""
        self.catchups = {}
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.disconnect(1011)

    # channels' consumer reads its channel with `channel_receive` (set in
    # `__call__`); a failed read (Redis away) would end the socket with a 1011.
    @property
    def channel_receive(self) -> Callable[[], Awaitable[Any]]:
        return self._channel_receive

    @channel_receive.setter
    def channel_receive(self, read: Callable[[], Awaitable[Any]]) -> None:
        self._channel_receive = layer.retrying(read)

    async def connect(self) -> None:
        user = self.scope["user"]
        self.conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        self.limiter = FrameLimiter()
        # Accept first so the close code reaches the browser (a refused
        # handshake would only show an HTTP 403).
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        owned = Conversation.objects.filter(pk=self.conversation_id, owner_id=user.pk)
        if not await owned.aexists():
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.remote = {}
        await runner.ensure_started()
        runner.subscribe(self.conversation_id, self)
        # Without it only other processes' answers are missed (and `join`
        # retries it): the socket stays.
        await layer.join(self.group, self.channel_name)
        self.watch_session()

    async def disconnect(self, code: int) -> None:
        """Idempotent, and never raises (see `__call__`)."""
        if self.left:
            return
        self.left = True
        for task in self.catchups.values():
            task.cancel()
        self.unwatch_session()
        if hasattr(self, "conversation_id"):
            runner.unsubscribe(self.conversation_id, self)
        if hasattr(self, "channel_name"):
            await layer.leave_all(self.channel_name)

    @property
    def group(self) -> str:
        return conversation_group(self.conversation_id)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None
    ) -> None:
        if self.signed_out or await self.flooded():
            return
        try:
            frame = frames.parse(text_data)
        except frames.FrameError as exc:
            await self.send_frame(frames.error(None, exc.code, exc.detail))
            return
        await self.handle(frame)

    async def handle(self, frame: frames.ClientFrame) -> None:
        """Act on one valid frame."""
        if frame["type"] == "send":
            await self.start_answer(frame["content"], frame["client_id"])
        elif frame["type"] == "stop":
            await runner.request_stop(self.conversation_id)
        elif frame["type"] == "resume":
            await self.resume(frame)
        elif frame["type"] == "regenerate":
            await self.start_answer("", "", retry=Conversation.begin_regenerate)
        elif frame["type"] == "edit":
            message_id, content = frame["message_id"], frame["content"]
            await self.start_answer(
                "", "", retry=lambda c: c.begin_edit(message_id, content)
            )
        elif frame["type"] == "preload":
            profile = await database_sync_to_async(_next_model)(self.conversation_id)
            if profile is not None:
                preloads = loop_state.current().preloads
                await preloads.request(profile, self.conversation_id, runner.broadcast)

    async def flooded(self) -> bool:
        """Whether this frame is over the rate (see chat.live.ratelimit)."""
        verdict = self.limiter.check()
        if verdict is Verdict.WARN:
            detail = "Too many frames at once: this one was dropped. Slow down."
            await self.send_frame(frames.error(None, "rate_limited", detail))
        elif verdict is Verdict.CLOSE:
            await self.close(code=CLOSE_RATE_LIMITED)
        return verdict is not Verdict.ACCEPT

    async def send_frame(self, frame: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(frame, ensure_ascii=False))

    async def start_answer(
        self,
        content: str,
        client_id: str,
        retry: Callable[[Conversation], Retry] | None = None,
    ) -> None:
        """A new turn: a sent question, or with `retry` a regenerate or an edit
        (which replaces the last question and answer)."""
        if not runner.claim(self.conversation_id):
            await self.send_frame(
                frames.error(None, "busy", "Wait for the current answer, or stop it.")
            )
            return
        told: list[dict[str, Any]] = []
        try:
            if retry is None:
                turn, plan = await database_sync_to_async(_begin_turn)(
                    self.conversation_id, content, client_id
                )
            else:
                retried, plan = await database_sync_to_async(_begin_retry)(
                    self.conversation_id, retry
                )
                turn = retried.turn
                # Every tab is told which messages the new turn replaces.
                told.append(frames.removed(retried.removed))
        except tuple(REFUSALS) as exc:
            runner.release(self.conversation_id)
            await self.send_frame(frames.error(None, REFUSALS[type(exc)], str(exc)))
            return
        except DatabaseError:
            # Nothing was stored (one transaction): say so, and the page gives
            # the text back to the composer; the socket stays open.
            logger.exception(
                "conversation %s: the turn was not stored", self.conversation_id
            )
            runner.release(self.conversation_id)
            await self.send_frame(frames.error(None, "not_stored", NOT_STORED))
            return
        except BaseException:
            runner.release(self.conversation_id)
            raise
        told.append(frames.message(turn.question))
        if turn.titled:
            told.append(frames.conversation(turn.question.conversation))
        # The stored turn goes to the runner at once (no await before it): its
        # task tells the sockets, so nothing can leave the conversation claimed.
        await runner.start(
            turn.profile, turn.answer, turn.history, turn.options, told=told, plan=plan
        )

    async def resume(self, frame: frames.ResumeFrame) -> None:
        resumed = await runner.resume(
            self,
            frame["message_id"],
            frame["offset"],
            frame["thinking_offset"],
            conversation_id=self.conversation_id,
        )
        if resumed:
            return
        # Not running here (any more): the stored message is the whole truth.
        message = await Message.shown.filter(
            pk=frame["message_id"], conversation_id=self.conversation_id
        ).afirst()
        if message is None:
            await self.send_frame(
                frames.error(
                    None, "not_found", "That message is not in this conversation."
                )
            )
        elif message.status == Message.Status.STREAMING and message.pk in self.remote:
            # Followed already (from its start, or a catch-up is on its way):
            # what the page has counts, and nothing is sent twice.
            have = self.remote[message.pk].have
            have["thinking"] = max(have["thinking"], frame["thinking_offset"])
            have["content"] = max(have["content"], frame["offset"])
        elif message.status == Message.Status.STREAMING:
            # Running on another process: it answers with a catch-up event. If
            # that process died, the orphan sweep sends the stored message.
            view = RemoteView(frame["thinking_offset"], frame["offset"])
            self.remote[message.pk] = view
            await self.ask_catchup(message.pk, view)
        else:
            await self.send_stored(message)

    async def send_stored(self, message: Message) -> None:
        await database_sync_to_async(_place_answer)(message)
        await self.send_frame(frames.message(message))

    # Channel-layer events from other processes (this process's own are skipped:
    # its sockets were sent the same frames directly).

    async def chat_frame(self, event: dict[str, Any]) -> None:
        if event["origin"] == runner.id:
            return
        frame = event["frame"]
        if frame["type"] == "start":
            self.remote[frame["message_id"]] = RemoteView()
        elif frame["type"] == "message":
            self.remote.pop(frame["message"]["id"], None)
        await self.send_frame(frame)

    async def chat_delta(self, event: dict[str, Any]) -> None:
        if event["origin"] == runner.id:
            return
        message_id = event["message_id"]
        view = self.remote.setdefault(message_id, RemoteView())
        delta = (event["kind"], event["start"], event["text"])
        if view.resuming:
            view.held.append(delta)  # sent after the catch-up, by offset
            return
        await self.take(message_id, view, [delta])

    async def take(
        self, message_id: int, view: RemoteView, deltas: list[tuple[Kind, int, str]]
    ) -> None:
        """Send what is new in `deltas`; at a gap (text missing here: joined
        mid-answer, or events lost while Redis was away), hold the rest and ask
        for a catch-up."""
        for i, (kind, start, text) in enumerate(deltas):
            new = view.take(kind, start, text)
            if new is None:
                view.held = deltas[i:]
                await self.ask_catchup(message_id, view)
                return
            if new:
                await self.send_frame(frames.delta(kind, message_id, new))

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
            await runner.request_resume(
                self.conversation_id, message_id, offsets, self.channel_name
            )
            try:
                async with asyncio.timeout(CATCHUP_SECONDS):
                    await view.caught.wait()
                return
            except TimeoutError:
                pass
            message = await Message.shown.filter(
                pk=message_id, conversation_id=self.conversation_id
            ).afirst()
            if message is None or message.status != Message.Status.STREAMING:
                # It ended meanwhile, and its final frames were lost.
                if self.remote.get(message_id) is view:
                    del self.remote[message_id]
                    if message is not None:
                        await self.send_stored(message)
                return

    async def chat_catchup(self, event: dict[str, Any]) -> None:
        message_id = event["message_id"]
        if "refused" in event:  # a resume from beyond the text
            self.remote.pop(message_id, None)
            await self.send_frame(event["refused"])
            return
        view = self.remote.setdefault(message_id, RemoteView())
        if view.resuming:  # not a retried request's second reply
            await self.send_frame(event["start"])
            if event.get("queued"):
                await self.send_frame(event["queued"])
        view.resuming = False
        view.caught.set()
        held, view.held = view.held, []
        caught: list[tuple[Kind, int, str]] = [
            ("thinking", *event["thinking"]),
            ("content", *event["content"]),
        ]
        await self.take(message_id, view, [*caught, *held])


def _next_model(conversation_id: int) -> ModelProfile | None:
    """The model the conversation's next answer would use, if it has one."""
    conversation = (
        Conversation.objects.select_related("model_profile")
        .filter(pk=conversation_id)
        .first()
    )
    try:
        return conversation.model_for_next_answer() if conversation else None
    except Conversation.NoModel:
        return None


def _place_answer(message: Message) -> None:
    """The last answer's versions, for its control (see `Message.versions`)."""
    if message.role == Message.Role.ASSISTANT:
        message.conversation.place_answer(message)


def _begin_turn(
    conversation_id: int, content: str, client_id: str
) -> tuple[Turn, admission.Plan]:
    conversation = Conversation.objects.select_related("model_profile").get(
        pk=conversation_id
    )
    # One commit for the question, the answer's placeholder and its place in line.
    with transaction.atomic():
        turn = conversation.begin_turn(content, client_id)
        plan = admission.take_ticket(turn.answer, turn.profile, conversation.owner_id)
    return turn, plan


def _begin_retry(
    conversation_id: int, begin: Callable[[Conversation], Retry]
) -> tuple[Retry, admission.Plan]:
    conversation = Conversation.objects.get(pk=conversation_id)
    with transaction.atomic():
        retry = begin(conversation)
        turn = retry.turn
        plan = admission.take_ticket(turn.answer, turn.profile, conversation.owner_id)
    return retry, plan
