"""What every socket of a conversation does, whoever opened it: the owner
(`chat.sockets.consumers`) or a shared link's viewer (`chat.sockets.share_consumers`).

It owns a `Feed` (what it hears of the conversation), reads its channel
through the guarded seam, drops frames over the rate, parses client frames,
and leaves the runner and its groups however it ends. What a client may ask
(`handle`) and how frames reach it (`send_frame`) are each socket's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from asgiref.typing import WebSocketSendEvent
from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from django.utils import translation
from django.utils.translation import gettext

from chat.http.daphne_protocol import text_sender
from chat.live.engine.processes import layer
from chat.live.protocol import frames
from chat.live.protocol.channel_events import (
    CatchupEvent,
    DeltaEvent,
    FrameEvent,
    StepsEvent,
)
from chat.live.protocol.frames import ServerFrame
from chat.live.protocol.share_frames import ViewerFrame
from chat.sockets import client_frames
from chat.sockets.close_codes import CLOSE_RATE_LIMITED, CLOSE_SERVER_ERROR
from chat.sockets.feed import Feed
from chat.sockets.languages import socket_language
from chat.sockets.ratelimit import FrameLimiter, Verdict


class LiveSocket(AsyncWebsocketConsumer):
    feed: Feed | None = None  # once the socket may hear the conversation
    send_text: Callable[[str], bool] | None = None  # Daphne's connection's own
    limiter: FrameLimiter
    signed_out: bool = False  # client frames are dropped (`SessionBound`)
    left: bool = False  # `leave` ran

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """However the socket ends (a crashed handler, a cancel), it leaves the
        runner and its groups: `disconnect` only runs on a clean close."""
        # The socket's texts (its errors, the answers' HTML that its turns
        # render) in its page's language; the tasks it starts inherit it.
        translation.activate(socket_language(scope))
        self.send_text = text_sender(send)
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.disconnect(CLOSE_SERVER_ERROR)

    async def dispatch(self, message: Any) -> None:
        """Channels' own first sends a hop to the database thread (to close its
        stale connections) for every frame and event, which then waits behind
        whatever that thread is running: on PostgreSQL, 1.9 ms of a question's
        5.5 before the model was asked (docs/latency.md, rule 8). This socket's
        database work all goes through `database_sync_to_async`, which closes
        them around each call in that thread."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    # channels' consumer reads its channel with `channel_receive` (set in
    # `__call__`); a failed read (Redis away) would end the socket with a 1011.
    @property
    def channel_receive(self) -> Callable[[], Awaitable[Any]]:
        return self._channel_receive

    @channel_receive.setter
    def channel_receive(self, read: Callable[[], Awaitable[Any]]) -> None:
        self._channel_receive = layer.retrying(read)

    async def open_feed(self, conversation_id: int) -> Feed:
        self.feed = Feed(self, conversation_id)
        await self.feed.open()
        return self.feed

    async def leave(self) -> None:
        """Idempotent, and never raises (see `__call__`)."""
        if self.left:
            return
        self.left = True
        if self.feed is not None:
            self.feed.close()
        if hasattr(self, "channel_name"):
            await layer.leave_all(self.channel_name)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None
    ) -> None:
        if self.signed_out or await self.flooded():
            return
        try:
            frame = client_frames.parse(text_data)
        except client_frames.FrameError as exc:
            await self.send_frame(frames.error(None, exc.code, exc.detail))
            return
        await self.handle(frame)

    async def handle(self, frame: client_frames.ClientFrame) -> None:
        """Act on one valid frame."""
        raise NotImplementedError

    async def flooded(self) -> bool:
        """Whether this frame is over the rate (see chat.sockets.ratelimit)."""
        verdict = self.limiter.check()
        if verdict is Verdict.WARN:
            detail = gettext(
                "Too many frames at once: this one was dropped. Slow down."
            )
            await self.send_frame(frames.error(None, "rate_limited", detail))
        elif verdict is Verdict.CLOSE:
            await self.close(code=CLOSE_RATE_LIMITED)
        return verdict is not Verdict.ACCEPT

    async def send_frame(self, frame: frames.ServerFrame) -> None:
        """To the client (the runner's `Sink`)."""
        raise NotImplementedError

    async def write(self, frame: ServerFrame | ViewerFrame) -> None:
        # This runs once per token and socket: under Daphne, the connection
        # frames it itself (`chat.http.daphne_protocol`); else straight to
        # the server's ASGI send, as Channels' `send` ends up doing after two
        # more calls. (asgiref's type asks for both keys; the spec, and
        # Channels' test communicator, for one of them.)
        text = frames.encode(frame)
        if self.send_text is not None and self.send_text(text):
            return
        event = {"type": "websocket.send", "text": text}
        await self.base_send(cast(WebSocketSendEvent, event))

    # Channel-layer events from other processes, for the feed.

    async def chat_frame(self, event: FrameEvent) -> None:
        if self.feed is not None:
            await self.feed.on_frame(event)

    async def chat_delta(self, event: DeltaEvent) -> None:
        if self.feed is not None:
            await self.feed.on_delta(event)

    async def chat_steps(self, event: StepsEvent) -> None:
        if self.feed is not None:
            await self.feed.on_steps(event)

    async def chat_catchup(self, event: CatchupEvent) -> None:
        if self.feed is not None:
            await self.feed.on_catchup(event)
