"""The conversation socket: validates frames and hands work to the runner.

The protocol is documented in `chat.frames`. The socket does not own the
generation (see `chat.runner`): disconnecting only unsubscribes.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from chat import frames
from chat.models import Conversation, Message, Turn
from chat.runner import runner

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403


class ChatConsumer(AsyncWebsocketConsumer):
    conversation_id: int

    async def connect(self) -> None:
        user = self.scope["user"]
        self.conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
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
        runner.subscribe(self.conversation_id, self)

    async def disconnect(self, code: int) -> None:
        runner.unsubscribe(self.conversation_id, self)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None
    ) -> None:
        try:
            frame = frames.parse(text_data)
        except frames.FrameError as exc:
            await self.send_frame(frames.error(None, exc.code, exc.detail))
            return
        if frame["type"] == "send":
            await self.start_answer(frame["content"], frame["client_id"])
        elif frame["type"] == "stop":
            runner.stop(self.conversation_id)
        elif frame["type"] == "resume":
            await self.resume(frame)

    async def send_frame(self, frame: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(frame, ensure_ascii=False))

    async def start_answer(self, content: str, client_id: str) -> None:
        if not runner.claim(self.conversation_id):
            await self.send_frame(
                frames.error(None, "busy", "Wait for the current answer, or stop it.")
            )
            return
        try:
            turn = await database_sync_to_async(_begin_turn)(
                self.conversation_id, content, client_id
            )
        except Conversation.NoModel as exc:
            runner.release(self.conversation_id)
            await self.send_frame(frames.error(None, "no_model", str(exc)))
            return
        except BaseException:
            runner.release(self.conversation_id)
            raise
        await runner.broadcast(self.conversation_id, frames.message(turn.question))
        if turn.titled:
            await runner.broadcast(
                self.conversation_id, frames.conversation(turn.question.conversation)
            )
        await runner.start(turn.profile, turn.answer, turn.history)

    async def resume(self, frame: frames.ResumeFrame) -> None:
        resumed = await runner.resume(
            self, frame["message_id"], frame["offset"], frame["thinking_offset"]
        )
        if resumed:
            return
        # Not running here (any more): the stored message is the whole truth.
        message = await Message.objects.filter(
            pk=frame["message_id"], conversation_id=self.conversation_id
        ).afirst()
        if message is None:
            await self.send_frame(
                frames.error(
                    None, "not_found", "That message is not in this conversation."
                )
            )
        else:
            await self.send_frame(frames.message(message))


def _begin_turn(conversation_id: int, content: str, client_id: str) -> Turn:
    conversation = Conversation.objects.select_related("model_profile").get(
        pk=conversation_id
    )
    return conversation.begin_turn(content, client_id)
