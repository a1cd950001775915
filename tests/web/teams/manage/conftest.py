"""Fixtures of the team management tests: the team Research (alice its admin,
bob a member), carol off it, alice's client."""

from __future__ import annotations

import pytest

from chat.models import Membership, Team
from tests.web.teams.manage.managing import client_of


@pytest.fixture
def team(alice, bob):
    team = Team.objects.create(name="Research")
    Membership.objects.create(team=team, user=alice, role=Membership.Role.ADMIN)
    Membership.objects.create(team=team, user=bob)
    return team


@pytest.fixture
def carol(django_user_model):
    return django_user_model.objects.create_user("carol", password="x")


@pytest.fixture
def admin_of_team(alice):
    return client_of(alice)
