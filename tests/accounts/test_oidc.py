"""OpenID Connect sign-in against a real provider (npm oidc-provider, see
tests/accounts/oidc_server.py), driven with httpx through the authorization-code
flow with PKCE, and every fault the sign-in must survive with a clear page and
no half account."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.contrib.auth.models import User

from chat.accounts import oidc
from chat.models import AuditEvent, Conversation, ExternalAccount, GroupRule, Team
from tests.accounts import oidc_server
from tests.accounts.oidc_server import (
    CLIENT_SECRET,
    PASSWORD,
    configure,
    login_at_provider,
    person,
    sign_in,
    site_client,
    to_provider,
)

pytestmark = pytest.mark.django_db

# The fixtures (tests/accounts/oidc_server.py), for this module.
oidc_provider = oidc_server.oidc_provider
oidc_site = oidc_server.oidc_site


def signed_in_as(client: httpx.Client) -> str | None:
    session_key = client.cookies.get("sessionid", domain="testserver.local")
    if session_key is None:
        session_key = client.cookies.get("sessionid")
    from django.contrib.sessions.backends.db import SessionStore

    user_id = SessionStore(session_key).get("_auth_user_id")
    return None if user_id is None else User.objects.get(pk=user_id).username


def no_account(username: str) -> bool:
    return not User.objects.filter(username=username).exists() and (
        not ExternalAccount.objects.filter(subject=f"sub-{username}").exists()
    )


def password_sign_in(client: httpx.Client, path: str, password: str):
    """alice at the site's own password form (its page first, for the CSRF
    cookie)."""
    client.get(path)
    return client.post(
        path,
        data={"username": "alice", "password": password},
        headers={"X-CSRFToken": client.cookies.get("csrftoken", "")},
    )


# ---------------------------------------------------------------- the flow


def test_first_sign_in_creates_the_account_through_pkce(oidc_site, oidc_provider):
    oidc_provider.set_accounts({"carol": person("carol", given_name="Carol")})
    start = oidc_site.get("/oidc/authenticate/")
    query = parse_qs(urlsplit(start.headers["location"]).query)
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["code_challenge"][0]) == 43  # base64url of a SHA-256

    page = oidc_site.get(start.headers["location"], follow_redirects=True)
    answer = oidc_site.get(login_at_provider(oidc_site, page, "carol"))

    assert answer.status_code == 302 and answer.headers["location"] == "/"
    assert signed_in_as(oidc_site) == "carol"
    carol = User.objects.get(username="carol")
    assert (carol.email, carol.first_name, carol.has_usable_password()) == (
        "carol@example.org",
        "Carol",
        False,
    )
    assert ExternalAccount.objects.get(user=carol).subject == "sub-carol"
    assert oidc_site.get("/").status_code == 200


def test_sign_in_returns_to_the_page_asked_for(oidc_site, oidc_provider):
    oidc_provider.set_accounts({"nia": person("nia")})
    login_page = oidc_site.get("/login/?next=/c/new/")
    assert 'href="/oidc/authenticate/?next=/c/new/"' in login_page.text
    start = oidc_site.get("/oidc/authenticate/?next=/c/new/")
    page = oidc_site.get(start.headers["location"], follow_redirects=True)
    answer = oidc_site.get(login_at_provider(oidc_site, page, "nia"))
    assert answer.headers["location"] == "/c/new/"


def test_later_sign_in_updates_name_and_email(oidc_site, oidc_provider):
    oidc_provider.set_accounts({"dave": person("dave")})
    assert sign_in(oidc_site, "dave").status_code == 302
    oidc_provider.set_accounts(
        {"dave": person("dave", email="dave@new.example.org", family_name="Newname")}
    )
    with site_client() as again:
        assert sign_in(again, "dave").status_code == 302
    dave = User.objects.get(username="dave")
    assert (dave.email, dave.last_name) == ("dave@new.example.org", "Newname")
    assert User.objects.filter(username="dave").count() == 1


def test_a_user_moved_between_groups_follows_at_next_sign_in(oidc_site, oidc_provider):
    gpu, cpu = Team.objects.create(name="GPU"), Team.objects.create(name="CPU")
    GroupRule.objects.create(group="gpu-users", team=gpu)
    GroupRule.objects.create(group="cpu-users", team=cpu)
    GroupRule.objects.create(group="chat-admins", makes_staff=True)
    oidc_provider.set_accounts(
        {"erin": person("erin", groups=["gpu-users", "chat-admins"])}
    )
    assert sign_in(oidc_site, "erin").status_code == 302
    erin = User.objects.get(username="erin")
    assert list(erin.teams.all()) == [gpu] and erin.is_staff

    oidc_provider.set_accounts({"erin": person("erin", groups=["cpu-users"])})
    with site_client() as again:
        assert sign_in(again, "erin").status_code == 302
    erin.refresh_from_db()
    assert list(erin.teams.all()) == [cpu] and not erin.is_staff


def test_a_single_group_sent_as_a_string_is_one_group(oidc_site, oidc_provider):
    gpu = Team.objects.create(name="GPU")
    GroupRule.objects.create(group="gpu-users", team=gpu)
    oidc_provider.set_accounts({"fay": person("fay", groups="gpu-users")})
    assert sign_in(oidc_site, "fay").status_code == 302
    assert list(User.objects.get(username="fay").teams.all()) == [gpu]


# ---------------------------------------------------------------- the login page


def test_the_login_page_offers_the_provider_and_the_password_form(oidc_site):
    page = oidc_site.get("/login/")
    assert "Sign in with Test provider" in page.text
    assert 'name="password"' in page.text


def test_the_password_form_is_hidden_and_refused_when_local_sign_in_is_off(
    oidc_site, settings, alice
):
    settings.CHATSITE_LOCAL_SIGNIN = False
    page = oidc_site.get("/login/")
    assert "Sign in with Test provider" in page.text
    assert 'name="password"' not in page.text
    refused = password_sign_in(oidc_site, "/login/", "password-alice-123")
    assert "switched off" in refused.text
    assert refused.status_code == 403 and signed_in_as(oidc_site) is None


# ---------------------------------------------------------------- faults


def failure(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    assert "You are not signed in" in response.text
    for word in words:
        assert word in response.text, response.text


def test_provider_down_shows_a_clear_page_and_local_sign_in_still_works(
    settings, alice
):
    configure(settings, "http://127.0.0.1:9")  # the discard port: nothing listens
    with site_client() as client:
        failure(
            client.get("/oidc/authenticate/"),
            503,
            "did not answer in time",
            "can still sign in below",
        )
        signed = password_sign_in(client, "/login/", "password-alice-123")
        assert signed.status_code == 302
        assert signed_in_as(client) == "alice"
    assert AuditEvent.objects.filter(
        kind=AuditEvent.Kind.SIGN_IN_FAILED, method="oidc"
    ).exists()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A provider that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_provider_slow_gives_up_after_the_timeout(settings, silent_server):
    configure(settings, silent_server, OIDC_TIMEOUT=1)
    with site_client() as client:
        failure(client.get("/oidc/authenticate/"), 503, "did not answer in time")


def test_provider_down_between_the_redirect_and_the_token(oidc_site, oidc_provider):
    oidc_provider.set_accounts({"gus": person("gus")})
    callback = login_at_provider(oidc_site, to_provider(oidc_site), "gus")
    # The discovery is remembered; the token endpoint is now somewhere dead.
    found = oidc.discover()
    oidc._discovered[found.issuer] = (
        time.monotonic(),
        oidc.Discovery(**{**found.__dict__, "token_endpoint": "http://127.0.0.1:9/t"}),
    )
    failure(oidc_site.get(callback), 503, "did not answer in time")
    assert no_account("gus")


def test_wrong_client_secret(oidc_site, oidc_provider, settings):
    oidc_provider.set_accounts({"hal": person("hal")})
    callback = login_at_provider(oidc_site, to_provider(oidc_site), "hal")
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET + "-wrong"
    failure(oidc_site.get(callback), 502, "refused this site&#x27;s own credentials")
    assert no_account("hal")


def test_replayed_state(oidc_site, oidc_provider):
    oidc_provider.set_accounts({"ivy": person("ivy")})
    callback = login_at_provider(oidc_site, to_provider(oidc_site), "ivy")
    assert oidc_site.get(callback).status_code == 302
    failure(oidc_site.get(callback), 400, "already completed")


def test_a_state_from_another_browser(oidc_site, oidc_provider):
    oidc_provider.set_accounts({"jon": person("jon")})
    callback = login_at_provider(oidc_site, to_provider(oidc_site), "jon")
    with site_client() as other:
        failure(other.get(callback), 400, "another browser")
    assert no_account("jon")


def test_expired_state(oidc_site, oidc_provider, settings):
    oidc_provider.set_accounts({"kim": person("kim")})
    callback = login_at_provider(oidc_site, to_provider(oidc_site), "kim")
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore(oidc_site.cookies.get("sessionid"))
    for entry in session["oidc_states"].values():
        entry["added_on"] -= settings.OIDC_STATE_MAX_AGE + 1
    session.save()
    failure(oidc_site.get(callback), 400, "expired")
    assert no_account("kim")


def _tamper(token: str) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "sub-someone-else"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=")
    return ".".join([header, forged.decode(), signature])


def test_tampered_id_token(oidc_site, oidc_provider, monkeypatch):
    oidc_provider.set_accounts({"lea": person("lea")})
    callback = login_at_provider(oidc_site, to_provider(oidc_site), "lea")
    real_get_token = oidc.OIDCBackend.get_token

    def tampered(self, payload):
        answer = real_get_token(self, payload)  # the provider's real answer
        return {**answer, "id_token": _tamper(answer["id_token"])}

    monkeypatch.setattr(oidc.OIDCBackend, "get_token", tampered)
    failure(oidc_site.get(callback), 400, "could not be verified")
    assert no_account("lea")


def test_userinfo_about_someone_else(oidc_site, oidc_provider, monkeypatch):
    """The ID token is genuine but the UserInfo answer names another person
    (OpenID Connect Core 5.3.2: its `sub` must be the token's)."""
    oidc_provider.set_accounts({"lou": person("lou"), "vic": person("vic")})
    callback = login_at_provider(oidc_site, to_provider(oidc_site), "lou")
    real_userinfo = oidc.OIDCBackend.get_userinfo

    def swapped(self, access_token, id_token, payload):
        claims = real_userinfo(self, access_token, id_token, payload)
        return {**claims, **person("vic"), "password": None}

    monkeypatch.setattr(oidc.OIDCBackend, "get_userinfo", swapped)
    failure(oidc_site.get(callback), 400, "could not be verified")
    assert no_account("lou") and no_account("vic")


@pytest.mark.parametrize("expected", ["OIDC_RP_CLIENT_ID", "issuer"])
def test_id_token_for_another_client_or_issuer(
    oidc_site, oidc_provider, monkeypatch, expected
):
    """A real, validly signed token the site must still refuse: meant for
    another client (`aud`), or from another issuer (`iss`)."""
    oidc_provider.set_accounts({"max": person("max")})
    callback = login_at_provider(oidc_site, to_provider(oidc_site), "max")
    real_get_token = oidc.OIDCBackend.get_token

    def elsewhere(self, payload):
        answer = real_get_token(self, payload)
        setattr(self, expected, "http://elsewhere.example")
        return answer

    monkeypatch.setattr(oidc.OIDCBackend, "get_token", elsewhere)
    failure(oidc_site.get(callback), 400, "could not be verified")
    assert no_account("max")


def test_unverified_email(oidc_site, oidc_provider):
    oidc_provider.set_accounts({"ned": person("ned", email_verified=False)})
    failure(sign_in(oidc_site, "ned"), 400, "has not verified your email")
    assert no_account("ned")


@pytest.mark.parametrize("groups", [{"gpu-users": True}, 7, ["gpu-users", 3]])
def test_group_claim_of_the_wrong_type(oidc_site, oidc_provider, groups):
    oidc_provider.set_accounts({"ola": person("ola", groups=groups)})
    failure(sign_in(oidc_site, "ola"), 400, "list of group names")
    assert no_account("ola")
    assert AuditEvent.objects.filter(
        kind=AuditEvent.Kind.SIGN_IN_FAILED, method="oidc"
    ).exists()


def test_email_domain_allowlist(oidc_site, oidc_provider, settings):
    settings.CHATSITE_ALLOWED_EMAIL_DOMAINS = ["example.com"]
    oidc_provider.set_accounts(
        {
            "pam": person("pam", email="pam@example.org"),
            "quin": person("quin", email="quin@example.com"),
        }
    )
    failure(sign_in(oidc_site, "pam"), 400, "example.com")
    assert no_account("pam")
    with site_client() as other:
        assert sign_in(other, "quin").status_code == 302
    assert User.objects.filter(username="quin").exists()


def test_a_user_removed_from_the_provider(oidc_site, oidc_provider, admin_user):
    oidc_provider.set_accounts({"ray": person("ray")})
    assert sign_in(oidc_site, "ray").status_code == 302
    ray = User.objects.get(username="ray")
    kept = Conversation.objects.create(owner=ray, title="Ray's notes")

    oidc_provider.set_accounts({})
    with site_client() as again:
        failure(
            sign_in(again, "ray"),
            400,
            "did not sign you in",
            "Unknown login or wrong password",
        )
        assert signed_in_as(again) is None
    # The account and what it wrote stay, the owner's, visible to staff.
    assert Conversation.objects.get(pk=kept.pk).owner == ray
    from django.test import Client

    staff = Client()
    staff.force_login(admin_user)
    listed = staff.get("/admin/chat/conversation/")
    assert listed.status_code == 200 and "Ray&#x27;s notes" in listed.text


def test_a_switched_off_account_is_refused(oidc_site, oidc_provider):
    oidc_provider.set_accounts({"sam": person("sam")})
    assert sign_in(oidc_site, "sam").status_code == 302
    assert oidc_site.get("/").status_code == 200
    User.objects.filter(username="sam").update(is_active=False)
    # Signed out at once, not when the session ends ...
    assert oidc_site.get("/").headers.get("location", "").startswith("/login/")
    # ... and refused at the next sign-in.
    with site_client() as again:
        failure(sign_in(again, "sam"), 400, "switched off")


def test_wrong_password_at_the_provider(oidc_site, oidc_provider):
    oidc_provider.set_accounts({"tia": person("tia")})
    callback = login_at_provider(
        oidc_site, to_provider(oidc_site), "tia", PASSWORD + "x"
    )
    failure(oidc_site.get(callback), 400, "did not sign you in")
    assert no_account("tia")


def test_sign_in_pages_are_404_without_a_provider(settings):
    settings.OIDC_ISSUER = ""
    with site_client() as client:
        assert client.get("/oidc/authenticate/").status_code == 404
        assert "Sign in with" not in client.get("/login/").text


def test_password_sign_in_never_asks_the_provider(settings, alice, silent_server):
    """A wrong password reaches every backend; ours must not call the
    provider for a request that merely carries `code` and `state`."""
    configure(settings, silent_server, OIDC_TIMEOUT=2)
    with site_client() as client:
        refused = password_sign_in(client, "/login/?code=x&state=y", "wrong")
    assert refused.status_code == 200
    assert "Please enter a correct username and password" in refused.text
