"""System checks for settings that are fine in development and unsafe in production."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Warning, register

from chat import frames


@register()
def settings_check(app_configs: Any, **kwargs: Any) -> list[Warning | Error]:
    problems: list[Warning | Error] = []
    if frames.max_frame_bytes() > frames.DAPHNE_MAX_MESSAGE_BYTES:
        problems.append(
            Warning(
                f"MESSAGE_MAX_CHARS={settings.MESSAGE_MAX_CHARS} allows WebSocket "
                "messages larger than Daphne accepts by default (1 MiB): Daphne "
                "would close the socket of a user who sends one.",
                hint="Start Daphne with --websocket-max-message-size "
                f"{frames.max_frame_bytes()} --websocket-max-frame-size "
                f"{frames.max_frame_bytes()} (`manage.py runsite` does).",
                id="chat.W002",
            )
        )
    if settings.DEBUG:
        return problems
    layer = settings.CHANNEL_LAYERS["default"]["BACKEND"]
    if layer == "channels.layers.InMemoryChannelLayer":
        problems.append(
            Warning(
                "The in-memory channel layer is in use with DEBUG off.",
                hint="Set REDIS_URL so tabs, share viewers and stop reach every "
                "Daphne process.",
                id="chat.W001",
            )
        )
    if settings.SECRET_KEY == settings.DEV_SECRET_KEY:
        problems.append(
            Error(
                "SECRET_KEY is the development key and DEBUG is off.",
                hint="Set SECRET_KEY to a long random value.",
                id="chat.E001",
            )
        )
    return problems
