"""A team admin manages the team in Chromium: makes an invitation link and sees
it, adds a colleague, and neither page breaks the Content Security Policy; the
staff's audit log lists what they did."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat.models import AuditEvent, Invitation, Membership, Team
from tests.browser.csp import violations

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_team_admin_invites_by_link_and_adds_a_colleague(
    page, login, live_server_url, alice, bob, admin_user
):
    team = Team.objects.create(name="Research")
    Membership.objects.create(team=team, user=alice, role=Membership.Role.ADMIN)
    login(page, alice)
    manage = live_server_url + reverse("team_manage", args=[team.pk])
    assert violations(page, live_server_url + reverse("team_home")) == []
    page.get_by_role("link", name="Manage Research").click()
    page.wait_for_url(manage)

    page.get_by_label("Email (optional)").fill("dan@example.org")
    page.get_by_role("button", name="Make an invitation link").click()
    link = page.get_by_label("Invitation link")
    value = link.input_value()
    assert value.startswith(live_server_url + "/invite/")
    invitation = Invitation.objects.get()
    assert (invitation.team, invitation.email) == (team, "dan@example.org")

    page.get_by_label("Username").fill("bob")
    page.get_by_role("button", name="Invite to the team").click()
    page.get_by_role("status").filter(has_text="bob is invited").wait_for()
    assert not team.members.filter(pk=bob.pk).exists()  # not without consent
    assert page.get_by_label("Invitation link").count() == 0  # shown once

    page.get_by_label("Username").fill("nobody")
    page.get_by_role("button", name="Invite to the team").click()
    page.get_by_role("alert").filter(has_text="No account is named").wait_for()
    assert violations(page, manage) == []

    login(page, bob)
    assert violations(page, live_server_url + reverse("team_home")) == []
    page.get_by_role("button", name="Join Research").click()
    page.get_by_role("status").filter(has_text="You are on Research.").wait_for()
    assert team.members.filter(pk=bob.pk).exists()

    login(page, admin_user)
    audit = live_server_url + reverse("admin_audit_log")
    assert violations(page, audit + "?user=alice") == []
    assert "Invitation created" in page.locator(".audit-table").inner_text()
    assert violations(page, audit + "?user=bob") == []  # who joined
    assert "Team membership changed" in page.locator(".audit-table").inner_text()
    invitations = AuditEvent.objects.filter(kind=AuditEvent.Kind.INVITATION_CREATED)
    assert invitations.count() == Invitation.objects.count()
