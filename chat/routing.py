from __future__ import annotations

from django.urls import path

from chat.consumers import ChatConsumer
from chat.share_consumers import ShareConsumer

websocket_urlpatterns = [
    # django-stubs types path() for views only; Channels' URLRouter takes these.
    path(
        "ws/conversations/<int:conversation_id>/",
        ChatConsumer.as_asgi(),  # type: ignore[arg-type]
    ),
    path("ws/share/<str:token>/", ShareConsumer.as_asgi()),  # type: ignore[arg-type]
]
