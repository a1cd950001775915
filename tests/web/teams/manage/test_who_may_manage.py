"""The team page's management (chat.web.teams.manage): who may manage a team
(its admins and staff), and everyone else refused."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Invitation, Membership, Team
from tests.conftest import PASSWORDS
from tests.web.teams.manage.audit import changes
from tests.web.teams.manage.managing import client_of, membership, url

pytestmark = pytest.mark.django_db


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


def test_sign_in_with_a_password_then_manage(alice, team, settings):
    from tests.web.signing_in import fresh_cache, sign_in

    fresh_cache(settings)
    client = Client()
    sign_in(client, "alice", PASSWORDS["alice"])
    assert client.get(url("team_manage", team)).status_code == 200
