"""A team's allow and deny lists of sites, set on the team's admin page
(`chat.tools.web.sites` applies them)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from chat.models import Team, TeamWebSites
from tests.ops.admin_forms import posted

pytestmark = pytest.mark.django_db


def test_a_teams_sites_are_set_in_its_admin(admin_client: Any) -> None:
    team = Team.objects.create(name="Research")
    url = reverse("admin:chat_team_change", args=[team.pk])
    page = admin_client.get(url)
    assert "allowed sites" in page.content.decode().lower()
    data = posted(
        page,
        **{
            "web_sites-TOTAL_FORMS": 1,
            "web_sites-0-allow": "example.org\ndocs.python.org",
            "web_sites-0-deny": "ads.example.org",
            "web_sites-0-team": team.pk,
        },
    )
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[-3000:]
    lists = TeamWebSites.objects.get(team=team)
    assert lists.allow.split() == ["example.org", "docs.python.org"]
    assert lists.deny == "ads.example.org"
    assert str(lists) == "Research"
