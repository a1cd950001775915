"""Who is on a WebSocket: the session cookie's user, looked up once at connect.

Channels' `AuthMiddlewareStack` also wraps every `send` of the socket (to save
a modified session), which put a layer of Python on each token's way out. Our
sockets never change the session, so this middleware resolves the user in one
trip to the database when the socket opens, and hands the socket's `send` to
the consumer untouched: nothing of it runs per frame.
"""

from __future__ import annotations

from importlib import import_module
from types import SimpleNamespace
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth import get_user
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.http import parse_cookie


class SessionUserMiddleware:
    """Puts `user` (and the `session` it came from) in a WebSocket's scope."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if "user" not in scope:  # (tests may set it themselves)
            cookies = _cookies(scope)
            session, user = await _session_user(
                cookies.get(settings.SESSION_COOKIE_NAME)
            )
            scope = {**scope, "cookies": cookies, "session": session, "user": user}
        return await self.inner(scope, receive, send)


def _cookies(scope: dict[str, Any]) -> dict[str, str]:
    for name, value in scope.get("headers", ()):
        if name == b"cookie":
            return parse_cookie(value.decode("latin1"))
    return {}


@database_sync_to_async
def _session_user(key: str | None) -> tuple[Any, AbstractBaseUser | AnonymousUser]:
    engine = import_module(settings.SESSION_ENGINE)
    session = engine.SessionStore(key)
    if key is None:
        return session, AnonymousUser()
    # Django's own check: the session's user, if its password hash still matches.
    return session, get_user(SimpleNamespace(session=session))  # type: ignore[arg-type]
