from __future__ import annotations

from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import path, re_path

from chat.sockets.close_codes import CLOSE_NOT_FOUND
from chat.sockets.consumers import ChatConsumer
from chat.sockets.share_consumers import ShareConsumer


class UnknownPath(AsyncWebsocketConsumer):
    """Any other socket path: closed with 4404 (without this, Channels' router
    raises, and Daphne answers HTTP 500 with a traceback in its log)."""

    async def connect(self) -> None:
        # Accept first so the close code reaches the browser.
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)


websocket_urlpatterns = [
    # django-stubs types path() for views only; Channels' URLRouter takes these.
    path(
        "ws/conversations/<int:conversation_id>/",
        ChatConsumer.as_asgi(),  # type: ignore[arg-type]
    ),
    path("ws/share/<str:token>/", ShareConsumer.as_asgi()),  # type: ignore[arg-type]
    re_path(r"", UnknownPath.as_asgi()),  # type: ignore[arg-type]
]
