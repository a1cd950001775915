"""The conversation socket: validates frames and hands work to the runner.

The protocol is documented in `chat.frames`. The socket does not own the
generation (see `chat.runner`): disconnecting only unsubscribes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.db import transaction

from chat import admission, frames
from chat.fanout import RemoteView, conversation_group
from chat.models import Conversation, Message, ModelProfile, Retry, Turn
from chat.preload import preloader
from chat.ratelimit import CLOSE_RATE_LIMITED, FrameLimiter, Verdict
from chat.runner import runner
from chat.session_sockets import SessionBound

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403

# A refused turn's error code, by the model's exception.
REFUSALS: dict[type[Exception], str] = {
    Conversation.NoModel: "no_model",
    Conversation.Busy: "busy",
    Conversation.NothingToRegenerate: "nothing_to_regenerate",
    Conversation.NotLastQuestion: "not_last_question",
}


class ChatConsumer(SessionBound, AsyncWebsocketConsumer):
    conversation_id: int
    # Answers streamed by other processes, by message id (see `chat.fanout`).
    remote: dict[int, RemoteView]
    limiter: FrameLimiter

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
        await self.channel_layer.group_add(self.group, self.channel_name)
        runner.subscribe(self.conversation_id, self)
        self.watch_session()

    async def disconnect(self, code: int) -> None:
        await self.unwatch_session()
        runner.unsubscribe(self.conversation_id, self)
        await self.channel_layer.group_discard(self.group, self.channel_name)

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
                await preloader.request(profile, self.conversation_id, runner.broadcast)

    async def flooded(self) -> bool:
        """Whether this frame is over the connection's rate (see chat.ratelimit)."""
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
        try:
            if retry is None:
                turn = await database_sync_to_async(_begin_turn)(
                    self.conversation_id, content, client_id
                )
            else:
                turn = await self.begin_retry(retry)
        except tuple(REFUSALS) as exc:
            runner.release(self.conversation_id)
            await self.send_frame(frames.error(None, REFUSALS[type(exc)], str(exc)))
            return
        except BaseException:
            runner.release(self.conversation_id)
            raise
        await runner.broadcast(self.conversation_id, frames.message(turn.question))
        if turn.titled:
            await runner.broadcast(
                self.conversation_id, frames.conversation(turn.question.conversation)
            )
        await runner.start(turn.profile, turn.answer, turn.history, turn.options)

    async def begin_retry(self, begin: Callable[[Conversation], Retry]) -> Turn:
        """Begin a regenerate or an edit, and tell every tab which messages
        the new turn replaces."""
        retry = await database_sync_to_async(_begin_retry)(self.conversation_id, begin)
        await runner.broadcast(self.conversation_id, frames.removed(retry.removed))
        return retry.turn

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
        elif message.status == Message.Status.STREAMING:
            # Running on another process: it answers with a catch-up event. If
            # that process died, the orphan sweep sends the stored message.
            view = RemoteView(frame["thinking_offset"], frame["offset"])
            self.remote[message.pk] = view
            await self.ask_catchup(message.pk, view)
        else:
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
        if view.resuming:
            return  # the catch-up will carry this text
        new = view.take(event["kind"], event["start"], event["text"])
        if new is None:
            # Text before this is missing here (joined mid-answer): ask for it.
            await self.ask_catchup(message_id, view)
        elif new:
            await self.send_frame(frames.delta(event["kind"], message_id, new))

    async def ask_catchup(self, message_id: int, view: RemoteView) -> None:
        view.resuming = True
        offsets = (view.have["thinking"], view.have["content"])
        await runner.request_resume(
            self.conversation_id, message_id, offsets, self.channel_name
        )

    async def chat_catchup(self, event: dict[str, Any]) -> None:
        message_id = event["message_id"]
        view = self.remote.setdefault(message_id, RemoteView())
        view.resuming = False
        await self.send_frame(event["start"])
        if event.get("queued"):
            await self.send_frame(event["queued"])
        for kind in ("thinking", "content"):
            start, text = event[kind]
            new = view.take(kind, start, text)
            if new:
                await self.send_frame(frames.delta(kind, message_id, new))


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


def _begin_turn(conversation_id: int, content: str, client_id: str) -> Turn:
    conversation = Conversation.objects.select_related("model_profile").get(
        pk=conversation_id
    )
    # One commit for the question, the answer's placeholder and its place in line.
    with transaction.atomic():
        turn = conversation.begin_turn(content, client_id)
        admission.take_ticket(turn.answer, turn.profile, conversation.owner_id)
    return turn


def _begin_retry(conversation_id: int, begin: Callable[[Conversation], Retry]) -> Retry:
    conversation = Conversation.objects.get(pk=conversation_id)
    with transaction.atomic():
        retry = begin(conversation)
        turn = retry.turn
        admission.take_ticket(turn.answer, turn.profile, conversation.owner_id)
    return retry
