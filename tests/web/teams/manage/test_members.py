"""The team page's management (chat.web.teams.manage): a team's admins invite
members by username or by a link and remove them; every change is audited."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat.models import Invitation, Membership, Team
from tests.web.teams.manage.audit import Kind, changes, events
from tests.web.teams.manage.managing import ADDRESS, client_of, membership, url

pytestmark = pytest.mark.django_db


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
