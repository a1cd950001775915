"""A user's own sockets end with their session (close code 4401).

The user is looked up once, when a socket opens (`chat.sockets.wsauth`), so without
this an open socket would keep sending questions and receiving answers after
its user signed out, was deactivated or deleted, or had their password changed.
Each owner socket joins its user's group on the channel layer (every process),
and:

* signing out (Django's `user_logged_out`) sends `session.end` naming that
  session (a digest of its key): the sockets of that session close; the user's
  other devices keep theirs;
* deleting the user sends `session.end` for every session;
* any other change to the user (deactivation, a new password: Django then no
  longer accepts the sessions made before) sends `session.check`: each socket
  looks its session up again, as at connect, and closes if it no longer signs
  the user in.

A share link's sockets never join: an anonymous viewer has no session to end.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from importlib import import_module
from types import SimpleNamespace
from typing import Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user, get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.http import HttpRequest

from chat.live.engine.processes import layer
from chat.live.protocol.channel_events import SessionCheck, SessionEnd, user_group
from chat.sockets.close_codes import CLOSE_SIGNED_OUT

logger = logging.getLogger(__name__)


def _digest(session_key: str | None) -> str:
    return hashlib.sha256((session_key or "").encode()).hexdigest()


class SessionBound:
    """For the owner's socket (`chat.sockets.consumers.ChatConsumer`): call
    `watch_session` once the user is known, `unwatch_session` on disconnect,
    and drop client frames once `signed_out`."""

    scope: Any
    channel_layer: Any
    channel_name: str
    conversation_id: int
    signed_out: bool = False
    watched: str | None = None

    watching: asyncio.Task[None] | None = None

    def watch_session(self) -> None:
        """Join the user's group, in the background: a database trip in
        `connect` would hold back the socket's first frames and events."""
        self.watched = user_group(self.scope["user"].pk)
        self.watching = asyncio.ensure_future(self._watch(self.watched))

    async def _watch(self, group: str) -> None:
        try:
            # Through the guarded seam: joined again if Redis lost it, and left
            # with the socket's other groups (`layer.leave_all` on disconnect).
            await layer.join(group, self.channel_name)
            # The session may have ended before the socket joined, when no
            # `session.end` could reach it.
            if not await _signs_in(self.scope):
                await self.end_session()
        except Exception:
            logger.warning("could not watch the session of a socket", exc_info=True)

    def unwatch_session(self) -> None:
        """On disconnect (the group itself is left with the socket's others)."""
        if self.watching is not None:
            self.watching.cancel()

    async def session_end(self, event: SessionEnd) -> None:
        if event["session"] in (None, _digest(self._session_key())):
            await self.end_session()

    async def session_check(self, event: SessionCheck) -> None:
        if not await _signs_in(self.scope):
            await self.end_session()

    async def end_session(self) -> None:
        if self.signed_out:
            return
        self.signed_out = True
        from chat.live.engine.runner import runner  # (this module loads with the app)

        # No answer's text reaches the socket any more, even before it closes.
        runner.unsubscribe(self.conversation_id, self)  # type: ignore[arg-type]
        await self.close(code=CLOSE_SIGNED_OUT)  # type: ignore[attr-defined]

    def _session_key(self) -> str | None:
        session = self.scope.get("session")
        return session.session_key if session is not None else None


@database_sync_to_async
def _signs_in(scope: dict[str, Any]) -> bool:
    """Whether the socket's session still signs its user in (Django's own
    check: the user exists, is active, and the password is unchanged)."""
    user_id = scope["user"].pk
    session = scope.get("session")
    if session is None:  # a test's scope, with the user set directly
        model = get_user_model()
        return model.objects.filter(pk=user_id, is_active=True).exists()
    fresh = import_module(settings.SESSION_ENGINE).SessionStore(session.session_key)
    user = get_user(SimpleNamespace(session=fresh))  # type: ignore[arg-type]
    return bool(user.is_authenticated and user.pk == user_id)


def _tell(user_id: int, event: SessionEnd | SessionCheck) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(user_group(user_id), dict(event))
    except Exception:
        # Signing out must work while the channel layer is away; the sockets
        # then end when they next reconnect.
        logger.warning("could not close the sockets of user %s", user_id, exc_info=True)


@receiver(user_logged_out)
def _signed_out(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    if user is not None:
        key = request.session.session_key
        _tell(user.pk, {"type": "session.end", "session": _digest(key)})


@receiver(post_save, sender=settings.AUTH_USER_MODEL)
def _user_changed(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    fields = kwargs.get("update_fields")
    if created or (fields is not None and set(fields) == {"last_login"}):
        return  # a new user has no sockets; signing in changes no session
    user_id = instance.pk
    transaction.on_commit(lambda: _tell(user_id, {"type": "session.check"}))


@receiver(post_delete, sender=settings.AUTH_USER_MODEL)
def _user_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    user_id = instance.pk
    transaction.on_commit(
        lambda: _tell(user_id, {"type": "session.end", "session": None})
    )
