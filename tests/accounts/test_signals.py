"""The audit log hears of every sign-in, failed sign-in and sign-out, with the
client's address and the way the person signed in (chat.accounts.signals)."""

from __future__ import annotations

import pytest
from django.contrib.auth import authenticate, login
from django.contrib.auth.backends import BaseBackend
from django.test import Client, RequestFactory

from chat.accounts.signals import method_of, refusal_recorded
from chat.models import AuditEvent
from tests.conftest import PASSWORDS
from tests.web.signing_in import fresh_cache, sign_in

pytestmark = pytest.mark.django_db

Kind = AuditEvent.Kind


@pytest.fixture(autouse=True)
def _fresh_cache(settings):
    fresh_cache(settings)


def kinds() -> list[str]:
    return list(AuditEvent.objects.order_by("pk").values_list("kind", flat=True))


def test_a_sign_in_is_recorded_with_address_and_method(alice):
    client = Client(REMOTE_ADDR="203.0.113.7")
    response = sign_in(client, "alice", PASSWORDS["alice"])
    assert response.status_code == 302
    [event] = AuditEvent.objects.all()
    assert (event.kind, event.actor, event.subject) == (Kind.SIGN_IN, alice, alice)
    assert (event.address, event.method, event.username) == (
        "203.0.113.7",
        "password",
        "alice",
    )


def test_a_wrong_password_is_recorded_without_an_account(alice):
    client = Client(REMOTE_ADDR="198.51.100.2")
    response = sign_in(client, "alice", "not her password")
    assert response.status_code == 200
    [event] = AuditEvent.objects.all()
    assert event.kind == Kind.SIGN_IN_FAILED
    assert (event.username, event.address, event.method) == (
        "alice",
        "198.51.100.2",
        "password",
    )
    assert event.subject is None and event.actor is None
    assert "not her password" not in str(event.detail)


def test_an_unknown_username_is_recorded_as_typed(db):
    sign_in(Client(), "mallory", "guess")
    [event] = AuditEvent.objects.all()
    assert (event.kind, event.username) == (Kind.SIGN_IN_FAILED, "mallory")


def test_a_failed_admin_sign_in_is_recorded_too(alice):
    sign_in(Client(), "alice", "wrong", path="/admin/login/")
    assert kinds() == [Kind.SIGN_IN_FAILED]


def test_a_throttled_attempt_is_recorded_as_failed(alice, settings):
    settings.SIGNIN_FAILURES_PER_USERNAME = 1
    client = Client()
    sign_in(client, "alice", "wrong")
    # Refused before the password is checked, even the right one.
    response = sign_in(client, "alice", PASSWORDS["alice"])
    assert response.status_code == 429
    assert kinds() == [Kind.SIGN_IN_FAILED, Kind.SIGN_IN_FAILED]
    throttled = AuditEvent.objects.order_by("pk").last()
    assert throttled.detail == {"reason": "throttled"}


def test_a_sign_out_is_recorded_with_how_the_session_began(alice):
    client = Client(REMOTE_ADDR="192.0.2.9")
    sign_in(client, "alice", PASSWORDS["alice"])
    client.post("/logout/")
    assert kinds() == [Kind.SIGN_IN, Kind.SIGN_OUT]
    event = AuditEvent.objects.get(kind=Kind.SIGN_OUT)
    assert (event.subject, event.address, event.method) == (
        alice,
        "192.0.2.9",
        "password",
    )


def test_a_sign_out_without_a_session_records_nothing(db):
    Client().post("/logout/")
    assert kinds() == []


def test_the_address_behind_a_trusted_proxy_is_the_clients(alice, settings):
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    client = Client(REMOTE_ADDR="10.1.2.3", HTTP_X_FORWARDED_FOR="203.0.113.50")
    sign_in(client, "alice", PASSWORDS["alice"])
    assert AuditEvent.objects.get().address == "203.0.113.50"


def test_a_forged_forwarded_header_is_not_believed(alice, settings):
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    client = Client(REMOTE_ADDR="203.0.113.8", HTTP_X_FORWARDED_FOR="10.9.9.9")
    sign_in(client, "alice", "wrong")
    assert AuditEvent.objects.get().address == "203.0.113.8"


def test_a_provider_sign_in_names_its_method(alice, settings):
    request = RequestFactory().get("/", REMOTE_ADDR="192.0.2.1")
    request.session = Client().session
    alice.backend = "chat.accounts.oidc.OIDCBackend"
    login(request, alice)
    assert AuditEvent.objects.get().method == "oidc"


def test_credentials_without_a_password_are_left_to_the_provider_seam(db):
    # The provider's callback authenticates with a code, not a password: its
    # refusals are recorded by chat.accounts.provisioning, with the reason.
    assert authenticate(None, code="abc", nonce="n") is None
    assert kinds() == []


@pytest.mark.parametrize(
    ("backend", "method"),
    [
        ("django.contrib.auth.backends.ModelBackend", "password"),
        ("chat.accounts.oidc.OIDCBackend", "oidc"),
        ("chat.accounts.ldap.LDAPBackend", "ldap"),
        ("django_python3_ldap.auth.LDAPBackend", "ldap"),
        ("mozilla_django_oidc.auth.OIDCAuthenticationBackend", "oidc"),
        ("", "password"),
    ],
)
def test_method_of_a_backend(backend, method):
    assert method_of(backend) == method


class RefusingBackend(BaseBackend):
    """A directory backend whose provisioning refused the person: the seam
    recorded the refusal with its reason; Django's failure signal follows."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        AuditEvent.record(
            Kind.SIGN_IN_FAILED, username=username, method="ldap", reason="off"
        )
        refusal_recorded(request)
        return None


def test_a_refusal_the_provider_seam_recorded_is_not_recorded_twice(alice, settings):
    settings.AUTHENTICATION_BACKENDS = [f"{__name__}.RefusingBackend"]
    response = sign_in(Client(), "alice", PASSWORDS["alice"])
    assert response.status_code == 200
    [event] = AuditEvent.objects.all()
    assert (event.method, event.detail) == ("ldap", {"reason": "off"})
