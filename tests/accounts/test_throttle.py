"""Sign-in throttling under attack: attempts sent at once, and addresses the
client writes itself (chat.accounts.throttle, chat.http.client_address). See also the
throttle's plain behaviour in tests/web/security/test_sign_in_throttle.py."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.db import SessionStore
from django.db import connections
from django.test import Client

from tests.conftest import PASSWORDS
from tests.web.signing_in import fresh_cache, sign_in

ROOT = Path(__file__).resolve().parents[2]
WRONG_GUESSES = 29


@pytest.fixture(autouse=True)
def _fresh_cache(settings):
    fresh_cache(settings)


class Gate:
    """Counts the attempts whose password is being checked and those refused,
    and holds every check until `expected` attempts are one or the other: all
    the attempts are then decided while none has finished its check, the widest
    race there can be, on any machine."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.checked = 0
        self.refused = 0
        self.condition = threading.Condition()

    def decided(self) -> int:
        return self.checked + self.refused

    def count(self, *, checked: bool) -> None:
        with self.condition:
            if checked:
                self.checked += 1
            else:
                self.refused += 1
            self.condition.notify_all()

    def wait_for(self, decided: int) -> None:
        with self.condition:
            assert self.condition.wait_for(lambda: self.decided() >= decided, 60)


GATE = Gate(0)


class GatedBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        GATE.count(checked=True)
        GATE.wait_for(GATE.expected)
        return super().authenticate(request, username, password, **kwargs)


def attempt(password: str, statuses: list[int]) -> None:
    try:
        status = sign_in(Client(), "alice", password).status_code
        statuses.append(status)
        if status == 429:
            GATE.count(checked=False)
    finally:
        connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_guesses_sent_at_once_get_no_more_checks_than_the_limit(alice, settings):
    """29 wrong guesses at once, then the right one while they are all still
    being checked: at most the limit are checked, the right one is refused."""
    global GATE
    settings.SIGNIN_FAILURES_PER_USERNAME = 5
    settings.AUTHENTICATION_BACKENDS = [f"{__name__}.GatedBackend"]
    GATE = Gate(WRONG_GUESSES + 1)
    statuses: list[int] = []
    wrong = [
        threading.Thread(target=attempt, args=("wrong", statuses))
        for _ in range(WRONG_GUESSES)
    ]
    for thread in wrong:
        thread.start()
    GATE.wait_for(WRONG_GUESSES)
    right_statuses: list[int] = []
    right = threading.Thread(target=attempt, args=(PASSWORDS["alice"], right_statuses))
    right.start()
    for thread in [*wrong, right]:
        thread.join(60)
        assert not thread.is_alive()
    assert GATE.checked <= 5
    assert statuses.count(200) == GATE.checked
    assert statuses.count(429) == WRONG_GUESSES - GATE.checked
    assert right_statuses == [429]


@pytest.mark.django_db
def test_a_client_writing_x_forwarded_for_is_still_counted_under_its_address(
    alice, settings
):
    settings.SIGNIN_FAILURES_PER_USERNAME = 3
    settings.TRUSTED_PROXIES = ()
    client = Client(REMOTE_ADDR="203.0.113.9")
    for hop in range(3):
        forwarded = {"HTTP_X_FORWARDED_FOR": f"198.51.100.{hop}"}
        assert (
            client.post(
                "/login/", {"username": "alice", "password": "wrong"}, **forwarded
            ).status_code
            == 200
        )
    spoofed = {"HTTP_X_FORWARDED_FOR": "198.51.100.77"}
    response = client.post(
        "/login/", {"username": "alice", "password": PASSWORDS["alice"]}, **spoofed
    )
    assert response.status_code == 429


@pytest.mark.django_db
def test_behind_a_trusted_proxy_clients_are_counted_by_the_address_it_names(
    alice, settings
):
    settings.SIGNIN_FAILURES_PER_ADDRESS = 3
    settings.TRUSTED_PROXIES = ("10.0.0.0/8",)
    proxy = Client(REMOTE_ADDR="10.0.0.2")

    def via_proxy(forwarded: str, username: str, password: str) -> int:
        return proxy.post(
            "/login/",
            {"username": username, "password": password},
            HTTP_X_FORWARDED_FOR=forwarded,
        ).status_code

    # One client tries three usernames; hops it writes before the proxy's own
    # entry do not give it fresh addresses.
    assert via_proxy("198.51.100.1", "a", "guess") == 200
    assert via_proxy("1.1.1.1, 198.51.100.1", "b", "guess") == 200
    assert via_proxy("2.2.2.2, 198.51.100.1", "c", "guess") == 200
    assert via_proxy("3.3.3.3, 198.51.100.1", "alice", PASSWORDS["alice"]) == 429
    # Another client behind the same proxy is not affected.
    assert via_proxy("198.51.100.2", "alice", PASSWORDS["alice"]) == 302


def test_daphne_is_deployed_without_trusting_forwarded_headers_itself():
    """`daphne --proxy-headers` replaces the peer address with the first
    (client-written) X-Forwarded-For entry: with it, anyone reaching Daphne
    directly could pick the address they are counted under."""
    unit = (ROOT / "deploy" / "chatsite.service").read_text()
    (command,) = re.findall(r"^ExecStart=(.*)$", unit, flags=re.MULTILINE)
    assert "chatsite.serve" in command and "--proxy-headers" not in command


@pytest.mark.django_db
def test_a_session_signed_in_with_a_local_password_before_stays_signed_in(alice):
    # Sessions name their backend: Django's own, as every local sign-in did
    # before the identity providers came (chat/accounts/local.py).
    session = SessionStore()
    session["_auth_user_id"] = str(alice.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = alice.get_session_auth_hash()
    session.create()
    client = Client()
    client.cookies[django_settings.SESSION_COOKIE_NAME] = session.session_key
    response = client.get("/")
    assert response.status_code == 200
    assert response.wsgi_request.user == alice
