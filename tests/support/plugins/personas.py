"""The suite's people (a pytest plugin, loaded with ``-p
tests.support.plugins.personas``):
``alice``, ``bob`` (users; ``admin_user``, a superuser, is tests/conftest.py's,
as it replaces pytest-django's), their passwords in ``PASSWORDS``,
``alice_client``, ``bob_client`` (logged-in ``Client``); ``login(page, user)``
puts ``user``'s session cookie into the page's browser context;
``session_cookie(user)`` returns ``"sessionid=..."`` for a
``WebsocketCommunicator`` ``headers=[(b"cookie", ...)]``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings

PASSWORDS = {
    "alice": "password-alice-123",
    "bob": "password-bob-123",
    "admin": "password-admin-123",
}


def make_user(model: Any, name: str, **extra: Any) -> Any:
    return model.objects.create_user(
        username=name, email=f"{name}@example.org", password=PASSWORDS[name], **extra
    )


@pytest.fixture
def alice(django_user_model: Any) -> Any:
    return make_user(django_user_model, "alice", first_name="Alice")


@pytest.fixture
def bob(django_user_model: Any) -> Any:
    return make_user(django_user_model, "bob", first_name="Bob")


@pytest.fixture
def alice_client(alice: Any) -> Any:
    from django.test import Client

    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def bob_client(bob: Any) -> Any:
    from django.test import Client

    client = Client()
    client.force_login(bob)
    return client


def _session_key(user: Any) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return str(client.cookies[settings.SESSION_COOKIE_NAME].value)


@pytest.fixture
def session_cookie() -> Callable[[Any], str]:
    """``session_cookie(user)`` -> ``"sessionid=<key>"`` (a Cookie header value)."""
    return lambda user: f"{settings.SESSION_COOKIE_NAME}={_session_key(user)}"


@pytest.fixture
def login(live_server_url: str) -> Callable[[Any, Any], None]:
    """``login(page_or_context, user)``: the browser is now logged in as ``user``."""

    def _login(target: Any, user: Any) -> None:
        context = getattr(target, "context", target)
        context.add_cookies(
            [
                {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": _session_key(user),
                    "url": live_server_url,
                }
            ]
        )

    return _login
