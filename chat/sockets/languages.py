"""A WebSocket's language, as its page's (chat.web.languages chose that one):
the signed-in user's choice kept in the session, else the browser's
Accept-Language, else English."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils import translation

from chat.models.accounts import LANGUAGE_SESSION_KEY


def socket_language(scope: dict[str, Any]) -> str:
    user, session = scope.get("user"), scope.get("session")
    if user is not None and user.is_authenticated and session is not None:
        chosen = session.get(LANGUAGE_SESSION_KEY)
        if chosen:
            return str(chosen)
    # Django's own choice from the header (and its language cookie), as for a
    # page: a request made of the socket's handshake.
    request = HttpRequest()
    for name, value in scope.get("headers", ()):
        if name == b"accept-language":
            request.META["HTTP_ACCEPT_LANGUAGE"] = value.decode("latin1")
    request.COOKIES = scope.get("cookies", {})
    return translation.get_language_from_request(request)
