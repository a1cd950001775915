"""The team page's management (chat.web.teams.manage): the team's usage this
period, per member and for the team."""

from __future__ import annotations

import re

import pytest

from chat.models import Conversation, Invitation, quotas
from tests.web.teams.manage.managing import url

pytestmark = pytest.mark.django_db


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
