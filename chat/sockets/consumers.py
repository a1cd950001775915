"""The conversation's owner's socket: validates frames and hands work to the
runner.

The protocol is documented in `chat.live.protocol.frames`. The socket does not own the
generation (see `chat.live.engine.runner`): disconnecting only unsubscribes. What it
hears of the conversation, and how it resumes an answer, is its feed's
(`chat.sockets.feed`), the same as a shared link's viewer's.
"""

from __future__ import annotations

from channels.db import database_sync_to_async

from chat.live.engine import control, loop_state
from chat.live.engine.runner import runner
from chat.live.engine.turn import beginning
from chat.live.protocol import frames
from chat.live.protocol.channel_events import GenerationApprove
from chat.models import Conversation
from chat.sockets import client_frames
from chat.sockets.base import LiveSocket
from chat.sockets.close_codes import CLOSE_FORBIDDEN, CLOSE_SIGNED_OUT
from chat.sockets.ratelimit import FrameLimiter
from chat.sockets.session_sockets import SessionBound


class ChatConsumer(SessionBound, LiveSocket):
    conversation_id: int

    async def connect(self) -> None:
        user = self.scope["user"]
        self.conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        self.limiter = FrameLimiter()
        # Accept first so the close code reaches the browser (a refused
        # handshake would only show an HTTP 403).
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_SIGNED_OUT)
            return
        owned = Conversation.objects.filter(pk=self.conversation_id, owner_id=user.pk)
        if not await database_sync_to_async(owned.exists)():
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self.open_feed(self.conversation_id)
        self.watch_session()

    async def disconnect(self, code: int) -> None:
        """Idempotent, and never raises (see `LiveSocket.__call__`)."""
        if self.left:
            return
        self.unwatch_session()
        await self.leave()

    async def handle(self, frame: client_frames.ClientFrame) -> None:
        """Act on one valid frame."""
        if frame["type"] == "send":
            await self.start_answer(
                beginning.Question(
                    self.conversation_id,
                    frame["content"],
                    frame["client_id"],
                    tuple(frame["attachments"]),
                    frame["truncate_documents"],
                )
            )
        elif frame["type"] == "stop":
            await control.request_stop(self.conversation_id)
        elif frame["type"] == "resume":
            assert self.feed is not None  # set in `connect`, or the socket was closed
            await self.feed.resume(
                frame["message_id"], frame["offset"], frame["thinking_offset"]
            )
        elif frame["type"] == "regenerate":
            answer_id = frame.get("message_id")
            await self.start_answer(
                beginning.Regenerate(self.conversation_id, answer_id)
            )
        elif frame["type"] == "edit":
            files = frame["attachments"]
            await self.start_answer(
                beginning.Edit(
                    self.conversation_id,
                    frame["message_id"],
                    frame["content"],
                    None if files is None else tuple(files),
                    frame["truncate_documents"],
                )
            )
        elif frame["type"] == "approve":
            await control.approve(
                GenerationApprove(
                    type="generation.approve",
                    conversation_id=self.conversation_id,
                    message_id=frame["message_id"],
                    call_id=frame["call_id"],
                    allow=frame["allow"],
                    user_id=self.scope["user"].pk,
                )
            )
        elif frame["type"] == "preload":
            next_model = database_sync_to_async(Conversation.next_model)
            profile = await next_model(self.conversation_id)
            if profile is not None:
                preloads = loop_state.current().preloads
                await preloads.request(profile, self.conversation_id, runner.broadcast)

    async def send_frame(self, frame: frames.ServerFrame) -> None:
        await self.write(frame)

    async def start_answer(self, ask: beginning.Ask) -> None:
        """A new turn (`chat.live.engine.turn.beginning`); a refused one is told to this
        socket only (the socket stays open)."""
        begun = await beginning.begin(ask)
        if isinstance(begun, beginning.Refused):
            await self.send_frame(
                frames.error(None, begun.code, begun.detail, content=begun.content)
            )
