"""The team page's management (chat.web.teams.manage): a team's admins and staff
add and remove members, change roles, see the team's usage and make invitation
links; everyone else is refused, and every change is audited."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import (
    AuditEvent,
    Conversation,
    Invitation,
    Membership,
    Team,
    quotas,
)
from tests.conftest import PASSWORDS

pytestmark = pytest.mark.django_db

Kind = AuditEvent.Kind
ADDRESS = "203.0.113.20"


@pytest.fixture
def team(alice, bob):
    team = Team.objects.create(name="Research")
    Membership.objects.create(team=team, user=alice, role=Membership.Role.ADMIN)
    Membership.objects.create(team=team, user=bob)
    return team


@pytest.fixture
def carol(django_user_model):
    return django_user_model.objects.create_user("carol", password="x")


def client_of(user) -> Client:
    client = Client(REMOTE_ADDR=ADDRESS)
    client.force_login(user)
    return client


@pytest.fixture
def admin_of_team(alice):
    return client_of(alice)


def url(name: str, team: Team, member: Membership | None = None) -> str:
    args = [team.pk] + ([member.pk] if member is not None else [])
    return reverse(name, args=args)


def membership(team: Team, user) -> Membership:
    return Membership.objects.get(team=team, user=user)


def changes() -> list[AuditEvent]:
    """The audit log but the sign-ins (`force_login` records one)."""
    return list(AuditEvent.objects.exclude(kind=Kind.SIGN_IN))


def events(kind: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(kind=kind).order_by("pk"))


# --- Who may manage ---


def test_the_team_admin_sees_members_usage_and_the_forms(admin_of_team, team):
    response = admin_of_team.get(url("team_manage", team))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Manage Research" in html and "bob" in html
    assert url("team_add_member", team) in html and url("team_invite", team) in html
    assert response["Cache-Control"].startswith("max-age=0")


def test_the_team_page_links_management_for_admins_only(admin_of_team, bob, team):
    link = url("team_manage", team)
    assert link in admin_of_team.get(reverse("team_home")).content.decode()
    assert link not in client_of(bob).get(reverse("team_home")).content.decode()


def test_a_plain_member_is_refused_with_403_everywhere(bob, team, alice):
    client = client_of(bob)
    alice_membership = membership(team, alice)
    assert client.get(url("team_manage", team)).status_code == 403
    posts = [
        (url("team_add_member", team), {"username": "bob"}),
        (url("team_remove_member", team, alice_membership), {}),
        (url("team_set_role", team, membership(team, bob)), {"role": "admin"}),
        (url("team_invite", team), {"email": ""}),
    ]
    for path, data in posts:
        response = client.post(path, data)
        assert response.status_code == 403, path
    assert "Only the team's admins manage it" in response.content.decode()
    assert membership(team, bob).role == Membership.Role.MEMBER
    assert Invitation.objects.count() == 0 and not changes()


def test_someone_off_the_team_gets_404(carol, team):
    client = client_of(carol)
    assert client.get(url("team_manage", team)).status_code == 404
    assert (
        client.post(url("team_add_member", team), {"username": "carol"}).status_code
        == 404
    )
    assert not Membership.objects.filter(user=carol).exists()


def test_a_team_that_does_not_exist_is_404(admin_of_team):
    assert admin_of_team.get(reverse("team_manage", args=[999999])).status_code == 404


def test_signed_out_visitors_are_sent_to_sign_in(client, team):
    response = client.get(url("team_manage", team))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_staff_manage_any_team_without_being_on_it(admin_user, team, carol):
    client = client_of(admin_user)
    assert client.get(url("team_manage", team)).status_code == 200
    client.post(url("team_add_member", team), {"username": "carol"})
    assert Invitation.objects.get(invitee=carol).created_by == admin_user


def test_an_admin_of_another_team_gets_404(django_user_model, team):
    other = Team.objects.create(name="Other")
    dave = django_user_model.objects.create_user("dave")
    Membership.objects.create(team=other, user=dave, role=Membership.Role.ADMIN)
    assert client_of(dave).get(url("team_manage", team)).status_code == 404


def test_a_switched_off_admin_cannot_manage(alice, team):
    client = client_of(alice)
    alice.is_active = False
    alice.save()
    # The session no longer signs anyone in: back to the sign-in page.
    response = client.get(url("team_manage", team))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    assert not team.managed_by(alice)


def test_a_get_to_a_change_is_refused(admin_of_team, team):
    assert admin_of_team.get(url("team_add_member", team)).status_code == 405


def test_a_membership_of_another_team_is_404(admin_of_team, team, bob):
    other = Team.objects.create(name="Other")
    theirs = Membership.objects.create(team=other, user=bob)
    response = admin_of_team.post(url("team_remove_member", team, theirs))
    assert response.status_code == 404
    assert Membership.objects.filter(pk=theirs.pk).exists()


# --- Adding ---


def test_adding_a_member_by_username_invites_them(admin_of_team, alice, team, carol):
    """Nobody is put on a team, where its admins see their usage, without
    saying yes: the admin's form makes an invitation, audited."""
    response = admin_of_team.post(url("team_add_member", team), {"username": " carol "})
    assert response.status_code == 302 and response.url == url("team_manage", team)
    assert not team.members.filter(pk=carol.pk).exists()
    invitation = Invitation.objects.get(invitee=carol)
    assert (invitation.team, invitation.created_by) == (team, alice)
    assert not events(Kind.MEMBERSHIP_CHANGED)
    [event] = events(Kind.INVITATION_CREATED)
    assert (event.actor, event.subject, event.address) == (alice, carol, ADDRESS)
    assert event.detail["team"] == "Research"
    page = admin_of_team.get(response.url).content.decode()
    assert "carol is invited: they join when they accept on their team page." in page
    assert "Invited, not answered yet: carol" in page


def test_the_invited_person_joins_by_accepting(admin_of_team, alice, team, carol):
    admin_of_team.post(url("team_add_member", team), {"username": "carol"})
    invitation = Invitation.objects.get(invitee=carol)
    carols = client_of(carol)
    page = carols.get(reverse("team_home")).content.decode()
    assert "alice invites you to the team Research." in page
    assert "see how many answers and output tokens you use" in page
    answer_url = reverse("team_answer_invitation", args=[invitation.pk])
    # Nobody else can answer it: not even the admin who made it.
    assert admin_of_team.post(answer_url, {"answer": "join"}).status_code == 404
    response = carols.post(answer_url, {"answer": "join"}, REMOTE_ADDR=ADDRESS)
    assert response.status_code == 302 and response.url == reverse("team_home")
    joined = membership(team, carol)
    assert (joined.role, joined.synced) == (Membership.Role.MEMBER, False)
    [event] = events(Kind.MEMBERSHIP_CHANGED)
    assert (event.actor, event.subject) == (carol, carol)
    assert event.detail["joined"] is True and event.detail["invited_by"] == "alice"
    page = carols.get(reverse("team_home")).content.decode()
    assert "You are on Research." in page and "invites you" not in page
    # Spent: a second answer (another tab) is a 404, and changes nothing.
    assert carols.post(answer_url, {"answer": "decline"}).status_code == 404
    assert team.members.filter(pk=carol.pk).exists()


def test_the_invited_person_may_decline(admin_of_team, team, carol):
    admin_of_team.post(url("team_add_member", team), {"username": "carol"})
    invitation = Invitation.objects.get(invitee=carol)
    carols = client_of(carol)
    answer_url = reverse("team_answer_invitation", args=[invitation.pk])
    assert carols.post(answer_url, {"answer": "decline"}).status_code == 302
    assert not team.members.filter(pk=carol.pk).exists()
    assert (
        "You declined to join Research."
        in carols.get(reverse("team_home")).content.decode()
    )
    # Asked again later: a new invitation.
    response = admin_of_team.post(url("team_add_member", team), {"username": "carol"})
    assert response.status_code == 302


def test_an_account_invitation_has_no_link_that_signs_up(admin_of_team, team, carol):
    admin_of_team.post(url("team_add_member", team), {"username": "carol"})
    invitation = Invitation.objects.get(invitee=carol)
    assert Invitation.objects.by_token("anything") is None
    assert not Invitation.objects.filter(invitee=None).exists()
    assert invitation.used_at is None


def test_inviting_twice_is_refused_until_answered(admin_of_team, team, carol):
    admin_of_team.post(url("team_add_member", team), {"username": "carol"})
    response = admin_of_team.post(url("team_add_member", team), {"username": "carol"})
    assert response.status_code == 400
    assert "“carol” is invited already and has not answered yet." in (
        response.content.decode()
    )
    assert Invitation.objects.filter(invitee=carol).count() == 1


@pytest.mark.parametrize(
    ("username", "error"),
    [
        ("", "This field is required."),
        ("   ", "This field is required."),
        ("nobody", "No account is named “nobody”. Invite them with a link instead."),
        ("bob", "“bob” is already on this team."),
        ("x" * 151, "Ensure this value has at most 150 characters"),
    ],
)
def test_adding_is_refused_with_a_clear_message(admin_of_team, team, username, error):
    response = admin_of_team.post(url("team_add_member", team), {"username": username})
    assert response.status_code == 400
    assert error in response.content.decode()
    assert team.memberships.count() == 2
    assert not events(Kind.MEMBERSHIP_CHANGED)
    assert not Invitation.objects.exists()


def test_adding_a_switched_off_account_is_refused(admin_of_team, team, carol):
    carol.is_active = False
    carol.save()
    response = admin_of_team.post(url("team_add_member", team), {"username": "carol"})
    assert response.status_code == 400
    assert "The account “carol” is switched off." in response.content.decode()
    assert not Invitation.objects.exists()


def test_usernames_are_matched_exactly(admin_of_team, team, carol):
    response = admin_of_team.post(url("team_add_member", team), {"username": "Carol"})
    assert response.status_code == 400
    assert not Invitation.objects.exists()


# --- Removing ---


def test_removing_a_member_is_audited(admin_of_team, alice, bob, team):
    response = admin_of_team.post(
        url("team_remove_member", team, membership(team, bob))
    )
    assert response.status_code == 302
    assert not team.members.filter(pk=bob.pk).exists()
    [event] = events(Kind.MEMBERSHIP_CHANGED)
    assert (event.actor, event.subject, event.detail["left"]) == (alice, bob, True)


def test_the_last_admin_cannot_be_removed(admin_of_team, alice, team):
    response = admin_of_team.post(
        url("team_remove_member", team, membership(team, alice))
    )
    assert response.status_code == 400
    assert "The last admin of this team cannot be removed" in response.content.decode()
    assert team.members.filter(pk=alice.pk).exists()
    assert not events(Kind.MEMBERSHIP_CHANGED)


def test_an_admin_may_leave_when_another_admin_stays(admin_of_team, alice, bob, team):
    Membership.objects.filter(team=team, user=bob).update(role=Membership.Role.ADMIN)
    response = admin_of_team.post(
        url("team_remove_member", team, membership(team, alice))
    )
    assert response.status_code == 302 and response.url == reverse("team_home")
    assert not team.members.filter(pk=alice.pk).exists()
    home = admin_of_team.get(response.url).content.decode()
    assert "alice left the team." in home


def test_a_synced_member_is_left_to_the_group_rules(admin_of_team, team, carol):
    synced = Membership.objects.create(team=team, user=carol, synced=True)
    for path, data in [
        (url("team_remove_member", team, synced), {}),
        (url("team_set_role", team, synced), {"role": "admin"}),
    ]:
        response = admin_of_team.post(path, data)
        assert response.status_code == 400
        assert "through a sign-in group rule" in response.content.decode()
    synced.refresh_from_db()
    assert synced.role == Membership.Role.MEMBER
    assert not changes()


def test_a_member_already_removed_is_404(admin_of_team, team, bob):
    gone = membership(team, bob)
    path = url("team_remove_member", team, gone)
    gone.delete()
    assert admin_of_team.post(path).status_code == 404


def test_a_membership_removed_meanwhile_is_refused_by_the_model(alice, bob, team):
    stale = membership(team, bob)
    Membership.objects.filter(pk=stale.pk).delete()
    with pytest.raises(Team.Refused, match="no longer on this team"):
        team.remove_member(stale, by=alice)


# --- Roles ---


def test_making_a_member_an_admin_is_audited(admin_of_team, alice, bob, team):
    path = url("team_set_role", team, membership(team, bob))
    assert admin_of_team.post(path, {"role": "admin"}).status_code == 302
    assert membership(team, bob).role == Membership.Role.ADMIN
    [event] = events(Kind.ROLE_CHANGED)
    assert (event.actor, event.subject, event.address) == (alice, bob, ADDRESS)
    assert event.detail["role"] == ["member", "admin"]
    # bob manages the team now.
    assert client_of(bob).get(url("team_manage", team)).status_code == 200


@pytest.mark.parametrize("role", ["", "owner", "ADMIN", "staff"])
def test_an_unknown_role_is_refused(admin_of_team, bob, team, role):
    response = admin_of_team.post(
        url("team_set_role", team, membership(team, bob)), {"role": role}
    )
    assert response.status_code == 400
    assert "Choose a role: member or team admin." in response.content.decode()
    assert membership(team, bob).role == Membership.Role.MEMBER
    assert not events(Kind.ROLE_CHANGED)


def test_the_same_role_again_changes_nothing(admin_of_team, bob, team):
    path = url("team_set_role", team, membership(team, bob))
    assert admin_of_team.post(path, {"role": "member"}).status_code == 302
    assert not events(Kind.ROLE_CHANGED)


def test_the_last_admin_cannot_demote_themselves(admin_of_team, alice, team):
    path = url("team_set_role", team, membership(team, alice))
    response = admin_of_team.post(path, {"role": "member"})
    assert response.status_code == 400
    assert "cannot be made a plain member" in response.content.decode()
    assert membership(team, alice).role == Membership.Role.ADMIN


def test_an_admin_who_steps_down_goes_back_to_the_team_page(
    admin_of_team, alice, bob, team
):
    Membership.objects.filter(team=team, user=bob).update(role=Membership.Role.ADMIN)
    path = url("team_set_role", team, membership(team, alice))
    response = admin_of_team.post(path, {"role": "member"})
    assert response.status_code == 302 and response.url == reverse("team_home")
    assert admin_of_team.get(url("team_manage", team)).status_code == 403


# --- Invitations ---


def test_an_invitation_link_is_shown_once_and_audited(admin_of_team, alice, team):
    response = admin_of_team.post(
        url("team_invite", team), {"email": "dan@example.org"}
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert (
        "no-store" in response["Cache-Control"]
        or "max-age=0" in response["Cache-Control"]
    )
    invitation = Invitation.objects.get()
    assert (invitation.team, invitation.email, invitation.created_by) == (
        team,
        "dan@example.org",
        alice,
    )
    link = html.split('id="invitation-link" type="text" readonly value="')[1]
    link = link.split('"')[0]
    token = link.rstrip("/").rsplit("/", 1)[1]
    assert link.startswith("http://testserver/invite/")
    assert Invitation.objects.by_token(token) == invitation and invitation.usable
    # Only the hash is kept: the page never shows it again.
    assert token not in admin_of_team.get(url("team_manage", team)).content.decode()
    [event] = events(Kind.INVITATION_CREATED)
    assert (event.actor, event.address, event.username) == (
        alice,
        ADDRESS,
        "dan@example.org",
    )
    assert event.detail["team"] == "Research"
    assert event.detail["invitation"] == invitation.pk


def test_an_invitation_without_an_email_is_for_anyone_with_the_link(
    admin_of_team, team
):
    response = admin_of_team.post(url("team_invite", team), {"email": ""})
    assert response.status_code == 200
    assert Invitation.objects.get().email == ""
    assert "the person you invite" in response.content.decode()


@pytest.mark.parametrize("email", ["not an email", "a@", "@example.org"])
def test_a_bad_email_makes_no_invitation(admin_of_team, team, email):
    response = admin_of_team.post(url("team_invite", team), {"email": email})
    assert response.status_code == 400
    assert "Enter a valid email address." in response.content.decode()
    assert Invitation.objects.count() == 0
    assert not events(Kind.INVITATION_CREATED)


def test_inviting_someone_who_has_an_account_says_to_add_them(admin_of_team, team, bob):
    response = admin_of_team.post(
        url("team_invite", team), {"email": "BOB@example.org"}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "BOB@example.org has an account here already: add them by their" in html
    assert Invitation.objects.count() == 0


# --- Usage ---


def answer(conversation: Conversation, tokens: int) -> None:
    conversation.messages.create(role="user", content="q")
    conversation.messages.create(
        role="assistant", content="a" * 8, status="done", output_tokens=tokens
    )


def test_usage_this_period_per_member_and_for_the_team(
    admin_of_team, alice, bob, team, demo_profile, carol
):
    team.member_output_tokens = 500
    team.team_answers = 10
    team.save()
    answer(Conversation.objects.create(owner=alice, model_profile=demo_profile), 120)
    bobs = Conversation.objects.create(owner=bob, model_profile=demo_profile)
    answer(bobs, 30)
    answer(bobs, 0)  # no server count: 8 characters are 2 tokens
    # Not on the team: not counted.
    answer(Conversation.objects.create(owner=carol, model_profile=demo_profile), 999)
    html = admin_of_team.get(url("team_manage", team)).content.decode()
    assert "<strong>3</strong> answers of 10" in html
    assert "<strong>152</strong> output tokens" in html
    rows = html.split("<tbody>")[1].split("</tbody>")[0].split("<tr>")[1:]
    alice_row, bob_row = rows
    assert "<td>1</td>" in alice_row and "<td>120 <span" in alice_row
    assert "<td>2</td>" in bob_row and "<td>32 <span" in bob_row
    assert "of 500" in bob_row
    assert not re.search(r"\b999\b", html)  # as a number: not in a CSRF token


def test_a_member_s_usage_counts_from_when_they_joined(
    admin_of_team, team, demo_profile, carol
):
    """What someone asked before joining (for another team, or alone) is not
    the team's: its admins see only what came after, and its quota counts
    the same."""
    team.team_answers = 10
    team.save()
    carols = Conversation.objects.create(owner=carol, model_profile=demo_profile)
    answer(carols, 999)  # before joining
    admin_of_team.post(url("team_add_member", team), {"username": "carol"})
    invitation = Invitation.objects.get(invitee=carol)
    assert invitation.answer(carol, join=True)
    answer(carols, 40)
    html = admin_of_team.get(url("team_manage", team)).content.decode()
    rows = html.split("<tbody>")[1].split("</tbody>")[0].split("<tr>")[1:]
    [carol_row] = [row for row in rows if "carol" in row]
    assert "<td>1</td>" in carol_row and "<td>40" in carol_row
    assert "<strong>1</strong> answer of 10" in html
    assert not re.search(r"\b999\b", html) and not re.search(r"\b1039\b", html)
    [limit] = [
        limit
        for limit in quotas.limits_for(carol)
        if limit.scope == "team Research" and limit.kind == quotas.ANSWERS
    ]
    assert limit.used == 1


def test_usage_without_limits_says_so(admin_of_team, team):
    html = admin_of_team.get(url("team_manage", team)).content.decode()
    assert "No team limit." in html and "today" in html


def test_sign_in_with_a_password_then_manage(alice, team, settings):
    from tests.web.signing_in import fresh_cache, sign_in

    fresh_cache(settings)
    client = Client()
    sign_in(client, "alice", PASSWORDS["alice"])
    assert client.get(url("team_manage", team)).status_code == 200


# --- Two admins demoting each other at once ---


def _waiting_for_a_lock() -> bool:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return bool(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_two_admins_demoting_each_other_at_once_leave_one(alice, bob):
    import threading

    from django.db import connections, transaction

    from tests.support.waiting import until_sync

    team = Team.objects.create(name="Pair")
    alices = Membership.objects.create(team=team, user=alice, role="admin")
    bobs = Membership.objects.create(team=team, user=bob, role="admin")
    outcome: list[str] = []

    def bob_demotes_alice() -> None:
        try:
            team.set_role(alices, "member", by=bob)
            outcome.append("demoted")
        except Team.Refused as refusal:
            outcome.append(str(refusal))
        finally:
            connections.close_all()

    with transaction.atomic():
        team.set_role(bobs, "member", by=alice)  # not committed yet
        other = threading.Thread(target=bob_demotes_alice)
        other.start()
        # bob's change waits for alice's to end, rather than counting admins
        # that alice's change is about to take away.
        until_sync(_waiting_for_a_lock, "bob's change waiting for the team's lock")
    other.join(20)
    assert outcome == [
        "The last admin of this team cannot be made a plain member: make "
        "someone else a team admin first."
    ]
    assert dict(team.memberships.values_list("user__username", "role")) == {
        "alice": "admin",
        "bob": "member",
    }
