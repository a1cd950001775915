"""Invitations end to end: the admin makes one and sees its link once, the
invitee opens `/invite/<token>/`, picks a username and a password, and is
signed in on the invitation's team. Every refusal is a clear page or form
error, and none leaves an account behind (`Invitation.accept`)."""

from __future__ import annotations

import html
import threading
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from chat.models import AuditEvent, Invitation, Membership, Team
from chat.models.accounts import WRONG_EMAIL
from chat.web.teams import invitations
from tests.support.waiting import until_sync

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-new-password-7"


@pytest.fixture
def team(db):
    return Team.objects.create(name="Research")


@pytest.fixture
def invite(admin_user, team):
    def make(**fields):
        fields.setdefault("team", team)
        return Invitation.create_with_token(created_by=admin_user, **fields)

    return make


def _url(token):
    return reverse("invitation", args=[token])


def _accept(client, token, username="carol", email="carol@example.org", **extra):
    data = {
        "username": username,
        "email": email,
        "password1": PASSWORD,
        "password2": PASSWORD,
        **extra,
    }
    return client.post(_url(token), data)


def _text(response):
    return html.unescape(response.content.decode())


def _users():
    return set(get_user_model().objects.values_list("username", flat=True))


# ---- the admin makes one --------------------------------------------------


def test_the_admin_creates_one_and_sees_its_link_once(admin_client, admin_user, team):
    expires = timezone.now() + timedelta(days=2)
    response = admin_client.post(
        reverse("admin:chat_invitation_add"),
        {
            "email": "carol@example.org",
            "team": team.pk,
            "expires_at_0": expires.strftime("%Y-%m-%d"),
            "expires_at_1": expires.strftime("%H:%M:%S"),
        },
    )
    page = _text(response)
    assert response.status_code == 200, page
    invitation = Invitation.objects.get()
    assert invitation.created_by == admin_user and invitation.team == team
    link = page.split('id="invitation-link"')[1].split('value="')[1].split('"')[0]
    token = link.rsplit("/invite/", 1)[1].strip("/")
    assert link.startswith("http://testserver/invite/")
    assert Invitation.objects.by_token(token) == invitation
    event = AuditEvent.objects.get(kind=AuditEvent.Kind.INVITATION_CREATED)
    assert event.actor == admin_user and event.detail["team"] == "Research"
    assert event.detail["email"] == "carol@example.org"

    change = admin_client.get(
        reverse("admin:chat_invitation_change", args=[invitation.pk])
    )
    assert change.status_code == 200 and token not in _text(change)
    listing = admin_client.get(reverse("admin:chat_invitation_changelist"))
    assert token not in _text(listing) and "open" in _text(listing)


def test_the_admin_lists_each_one_with_its_state(admin_client, invite, alice):
    invite(email="open@example.org")
    invite(email="old@example.org", expires_at=timezone.now() - timedelta(days=1))
    used, _ = invite(email="alice@example.org")
    used.used_at, used.used_by = timezone.now(), alice
    used.save()
    page = _text(admin_client.get(reverse("admin:chat_invitation_changelist")))

    def row(email):
        (found,) = [r for r in page.split("<tr")[2:] if f"for {email} to" in r]
        return found.split('<td class="field-state">')[1].split("</td>")[0]

    assert row("open@example.org") == "open"
    assert row("old@example.org") == "expired"
    assert row("alice@example.org") == "used by alice"


def test_the_admin_withdraws_one_by_ending_it_now(admin_client, invite):
    invitation, token = invite()
    now = timezone.now()
    response = admin_client.post(
        reverse("admin:chat_invitation_change", args=[invitation.pk]),
        {
            "expires_at_0": now.strftime("%Y-%m-%d"),
            "expires_at_1": now.strftime("%H:%M:%S"),
        },
    )
    assert response.status_code == 302
    invitation.refresh_from_db()
    assert invitation.team is not None and not invitation.usable
    assert Client().get(_url(token)).status_code == 410


def test_the_admin_cannot_create_one_that_already_expired(admin_client, team):
    past = timezone.now() - timedelta(minutes=5)
    response = admin_client.post(
        reverse("admin:chat_invitation_add"),
        {
            "team": team.pk,
            "expires_at_0": past.strftime("%Y-%m-%d"),
            "expires_at_1": past.strftime("%H:%M:%S"),
        },
    )
    assert response.status_code == 200
    assert "This time has passed: the link would never work." in _text(response)
    assert not Invitation.objects.exists()
    assert not AuditEvent.objects.filter(kind="invitation_created").exists()


def test_the_admin_add_form_proposes_a_week(admin_client):
    response = admin_client.get(reverse("admin:chat_invitation_add"))
    expected = (timezone.now() + Invitation.DEFAULT_LIFETIME).strftime("%Y-%m-%d")
    assert response.status_code == 200 and expected in _text(response)


# ---- the invitee accepts --------------------------------------------------


def test_the_invitee_sets_a_password_and_lands_in_the_team(client, invite, team):
    invitation, token = invite()
    page = client.get(_url(token))
    assert page.status_code == 200
    assert "Research" in _text(page)

    response = _accept(client, token)
    assert response.status_code == 302 and response.url == reverse("team_home")
    carol = get_user_model().objects.get(username="carol")
    assert carol.email == "carol@example.org" and carol.check_password(PASSWORD)
    membership = Membership.objects.get(user=carol)
    assert membership.team == team and membership.role == Membership.Role.MEMBER
    assert not membership.synced
    invitation.refresh_from_db()
    assert invitation.used_by == carol and invitation.used_at is not None
    # Signed in: the team page opens.
    assert client.get(reverse("team_home")).status_code == 200
    event = AuditEvent.objects.get(kind=AuditEvent.Kind.INVITATION_USED)
    assert event.subject == carol and event.method == "invitation"
    assert event.address == "127.0.0.1"
    created = AuditEvent.objects.get(kind=AuditEvent.Kind.ACCOUNT_CREATED)
    assert created.subject == carol and created.method == "invitation"
    assert event.detail["team"] == "Research" and event.detail["invited_by"] == "admin"


def test_one_without_a_team_lands_on_the_conversations(client, invite):
    _, token = invite(team=None)
    response = _accept(client, token)
    assert response.status_code == 302 and response.url == reverse("home")
    assert not Membership.objects.exists()


def test_a_bound_email_is_enforced_and_not_shown(client, invite):
    invitation, token = invite(email="Carol@Example.org")
    page = _text(client.get(_url(token)))
    assert "carol@example.org" not in page.casefold()

    response = _accept(client, token, email="mallory@example.org")
    assert response.status_code == 422
    assert WRONG_EMAIL in _text(response)
    assert "carol" not in _users()
    invitation.refresh_from_db()
    assert invitation.used_at is None

    assert _accept(client, token, email=" carol@example.org").status_code == 302
    assert get_user_model().objects.get(username="carol").email == "carol@example.org"


def test_a_bound_email_is_checked_again_in_the_transaction(invite):
    invitation, _ = invite(email="carol@example.org")
    with pytest.raises(Invitation.Unusable) as refused:
        invitation.accept(
            username="carol", email="mallory@example.org", password=PASSWORD
        )
    assert refused.value.code == "email" and "carol" not in _users()


# ---- refusals: clear pages, no account -----------------------------------


def test_an_unknown_link_is_a_clear_404(client, invite):
    invite()
    for response in (client.get(_url("not-a-token")), _accept(client, "nope")):
        assert response.status_code == 404
        assert invitations.UNKNOWN in _text(response)
    assert "carol" not in _users()


def test_an_expired_invitation_is_refused(client, invite):
    _, token = invite(expires_at=timezone.now() - timedelta(minutes=1))
    for response in (client.get(_url(token)), _accept(client, token)):
        assert response.status_code == 410
        assert "This invitation expired on" in _text(response)
    assert "carol" not in _users()


def test_an_invitation_used_twice_is_refused(client, invite):
    invitation, token = invite()
    assert _accept(client, token).status_code == 302
    other = Client()
    for response in (other.get(_url(token)), _accept(other, token, "dave")):
        assert response.status_code == 410
        assert "already been used" in _text(response)
    assert "dave" not in _users()
    assert Membership.objects.count() == 1


def test_an_invitation_spent_between_the_form_and_the_save_is_refused(invite):
    invitation, _ = invite()
    stale = Invitation.objects.get(pk=invitation.pk)  # read before it was used
    invitation.accept(username="carol", email="c@example.org", password=PASSWORD)
    with pytest.raises(Invitation.Unusable) as refused:
        stale.accept(username="dave", email="d@example.org", password=PASSWORD)
    assert refused.value.code == "used" and "dave" not in _users()


@pytest.mark.parametrize(
    ("password1", "password2", "error"),
    [
        ("short1", "short1", "This password is too short"),
        ("password123", "password123", "This password is too common"),
        ("carol@example.org", "carol@example.org", "too similar to the email"),
        ("12345678901234", "12345678901234", "entirely numeric"),
        (PASSWORD, PASSWORD + "x", "The two password fields didn"),
    ],
)
def test_a_bad_password_is_refused(client, invite, password1, password2, error):
    invitation, token = invite()
    response = _accept(client, token, password1=password1, password2=password2)
    assert response.status_code == 422
    assert error in _text(response)
    assert "carol" not in _users()
    invitation.refresh_from_db()
    assert invitation.used_at is None


@pytest.mark.parametrize(
    ("username", "email", "error"),
    [
        ("alice", "carol@example.org", "A user with that username already exists"),
        ("ALICE", "carol@example.org", "A user with that username already exists"),
        ("aliсe", "carol@example.org", "looks like the existing account “alice”"),
        ("a1ice", "carol@example.org", "looks like the existing account “alice”"),
        ("pаypal", "carol@example.org", "mixes scripts"),
        ("bad name!", "carol@example.org", "Enter a valid username"),
        ("", "carol@example.org", "This field is required"),
        ("carol", "", "This field is required"),
        ("carol", "not-an-address", "Enter a valid email address"),
    ],
)
def test_a_bad_username_or_email_is_refused(
    client, invite, alice, username, email, error
):
    invitation, token = invite()
    response = _accept(client, token, username=username, email=email)
    assert response.status_code == 422
    assert error in _text(response)
    assert _users() == {"admin", "alice"}
    invitation.refresh_from_db()
    assert invitation.used_at is None


def test_a_username_taken_meanwhile_leaves_the_invitation_unused(
    client, invite, alice, monkeypatch
):
    # The form checked the name before someone else took it: the database's
    # unique constraint refuses the account, the whole transaction rolls back.
    monkeypatch.setattr(
        invitations.AcceptInvitationForm,
        "clean_username",
        lambda form: form.cleaned_data["username"],
    )
    monkeypatch.setattr(
        invitations.AcceptInvitationForm, "validate_unique", lambda form: None
    )
    invitation, token = invite()
    response = _accept(client, token, username="alice")
    assert response.status_code == 422
    assert invitations.USERNAME_TAKEN in _text(response)
    invitation.refresh_from_db()
    assert invitation.used_at is None and not Membership.objects.exists()


def test_a_failure_midway_leaves_no_half_account(invite, monkeypatch):
    invitation, _ = invite()

    def broken(*args, **kwargs):
        raise RuntimeError("the audit log is away")

    monkeypatch.setattr(AuditEvent, "record", broken)
    with pytest.raises(RuntimeError):
        invitation.accept(username="carol", email="c@example.org", password=PASSWORD)
    assert "carol" not in _users() and not Membership.objects.exists()
    invitation.refresh_from_db()
    assert invitation.used_at is None and invitation.used_by is None


def test_a_signed_in_user_is_asked_to_sign_out_first(alice_client, invite):
    invitation, token = invite()
    assert alice_client.get(_url(token)).status_code == 409
    response = _accept(alice_client, token)
    assert response.status_code == 409
    assert "You are signed in as alice" in _text(response)
    invitation.refresh_from_db()
    assert invitation.used_at is None and "carol" not in _users()


def test_refused_while_local_passwords_are_off(client, invite, settings):
    settings.CHATSITE_LOCAL_SIGNIN = False
    invitation, token = invite()
    for response in (client.get(_url(token)), _accept(client, token)):
        assert response.status_code == 403
        assert invitations.NO_LOCAL_SIGNIN in _text(response)
    assert "carol" not in _users()


# ---- two at once ------------------------------------------------------------


def _waiting_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return bool(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_two_people_sending_one_link_at_once_make_one_account(invite, monkeypatch):
    """The first holds the invitation's row lock (its audit write is held
    back); the second waits for it, then finds the invitation used."""
    invitation, _ = invite()
    holding, release = threading.Event(), threading.Event()
    record = AuditEvent.record

    def held_back(*args, **kwargs):
        if threading.current_thread().name == "first":
            holding.set()
            assert release.wait(30), "never released"
        return record(*args, **kwargs)

    monkeypatch.setattr(AuditEvent, "record", held_back)
    outcomes = {}

    def accept(name):
        try:
            Invitation.objects.get(pk=invitation.pk).accept(
                username=name, email=f"{name}@example.org", password=PASSWORD
            )
            outcomes[name] = "account"
        except Invitation.Unusable as unusable:
            outcomes[name] = unusable.code
        finally:
            connections.close_all()

    first = threading.Thread(target=accept, args=["first"], name="first")
    first.start()
    until_sync(holding.is_set, "the first holds the invitation's lock")
    second = threading.Thread(target=accept, args=["second"], name="second")
    second.start()
    try:
        until_sync(_waiting_for_a_lock, "the second waits for the first's lock")
    finally:
        release.set()
        first.join(30)
        second.join(30)
    assert outcomes == {"first": "account", "second": "used"}
    assert _users() == {"admin", "first"}
