"""Sign-in throttling: repeated failures refuse even the right password, per
username and per address, for a window; the admin's sign-in too."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.conftest import PASSWORDS
from tests.web.signing_in import fresh_cache, sign_in

# --------------------------------------------------------------------------
# Sign-in throttling


@pytest.mark.django_db
def test_sign_in_is_refused_after_repeated_failures_even_with_the_password(
    client, alice, settings
):
    settings.SIGNIN_FAILURES_PER_USERNAME = 5
    for _ in range(5):
        response = sign_in(client, "alice", "wrong")
        assert response.status_code == 200
        assert "correct username and password" in response.content.decode()
    response = sign_in(client, "Alice ", PASSWORDS["alice"])
    assert response.status_code == 429
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert "15 minutes" in response.content.decode()
    assert "_auth_user_id" not in client.session
    # Another account from elsewhere is not affected.
    other = Client(REMOTE_ADDR="10.0.0.9")
    assert sign_in(other, "bob", "wrong").status_code == 200


@pytest.mark.django_db
def test_failing_with_someone_elses_username_does_not_lock_them_out(
    client, alice, settings
):
    settings.SIGNIN_FAILURES_PER_USERNAME = 3
    for _ in range(3):
        assert sign_in(client, "alice", "wrong").status_code == 200
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 429
    # Alice, at her own desk, still signs in; the other address stays refused.
    at_her_desk = Client(REMOTE_ADDR="10.0.0.7")
    assert sign_in(at_her_desk, "alice", PASSWORDS["alice"]).status_code == 302
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 429


@pytest.mark.django_db
def test_the_lockout_ends_with_its_window(client, alice, settings):
    settings.SIGNIN_FAILURES_PER_USERNAME = 2
    for _ in range(2):
        sign_in(client, "alice", "wrong")
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 429
    fresh_cache(settings)  # what the window's expiry does
    response = sign_in(client, "alice", PASSWORDS["alice"])
    assert response.status_code == 302 and client.session["_auth_user_id"]


@pytest.mark.django_db
def test_a_successful_sign_in_forgets_earlier_failures(client, alice, settings):
    settings.SIGNIN_FAILURES_PER_USERNAME = 3
    for _ in range(2):
        sign_in(client, "alice", "wrong")
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 302
    client.logout()
    for _ in range(2):
        assert sign_in(client, "alice", "wrong").status_code == 200
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 302


@pytest.mark.django_db
def test_one_address_trying_many_usernames_is_refused(client, alice, settings):
    settings.SIGNIN_FAILURES_PER_ADDRESS = 4
    for name in ("a", "b", "c", "d"):
        assert sign_in(client, name, "guess").status_code == 200
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 429
    elsewhere = Client(REMOTE_ADDR="10.1.2.3")
    assert sign_in(elsewhere, "alice", PASSWORDS["alice"]).status_code == 302


@pytest.mark.django_db
def test_the_admin_sign_in_is_throttled_too(client, admin_user, settings):
    settings.SIGNIN_FAILURES_PER_USERNAME = 2
    path = reverse("admin:login")
    for _ in range(2):
        sign_in(client, "admin", "wrong", path)
    response = sign_in(client, "admin", PASSWORDS["admin"], path)
    assert response.status_code == 200
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_sign_in_still_works_while_the_cache_is_away(client, alice, settings, caplog):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens there
        }
    }
    assert sign_in(client, "alice", "wrong").status_code == 200
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 302
    assert "sign-in failures are not counted" in caplog.text
