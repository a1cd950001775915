"""The team page's management (chat.web.teams.manage): a member made an admin
and back, audited; the last admin stays, even with two admins demoting each
other at once."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat.models import Membership, Team
from tests.web.teams.manage.audit import Kind, events
from tests.web.teams.manage.managing import ADDRESS, client_of, membership, url

pytestmark = pytest.mark.django_db


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
