"""Sign-in group rules: memberships and the staff role follow the provider's
groups at every sign-in; what was set by hand is left alone."""

from __future__ import annotations

from typing import Any

import pytest

from chat.models import GroupRule, Membership, Team

pytestmark = pytest.mark.django_db


@pytest.fixture
def gpu() -> Team:
    return Team.objects.create(name="GPU")


@pytest.fixture
def research() -> Team:
    return Team.objects.create(name="Research")


def _teams(user: Any) -> dict[str, tuple[str, bool]]:
    return {
        m.team.name: (m.role, m.synced)
        for m in Membership.objects.filter(user=user).select_related("team")
    }


def test_a_user_moved_between_groups_moves_between_teams(
    alice: Any, gpu: Team, research: Team
) -> None:
    GroupRule.objects.create(group="gpu-users", team=gpu)
    GroupRule.objects.create(group="researchers", team=research)

    applied = GroupRule.apply(alice, ["gpu-users", "unrelated"], "oidc")
    assert applied.joined == ["GPU"] and applied.left == []
    assert _teams(alice) == {"GPU": ("member", True)}

    applied = GroupRule.apply(alice, ["researchers"], "oidc")
    assert applied.joined == ["Research"] and applied.left == ["GPU"]
    assert _teams(alice) == {"Research": ("member", True)}

    assert not GroupRule.apply(alice, ["researchers"], "oidc").changed


def test_memberships_added_by_hand_stay(alice: Any, gpu: Team, research: Team) -> None:
    GroupRule.objects.create(group="gpu-users", team=gpu)
    research.members.add(alice)
    GroupRule.apply(alice, [], "ldap")
    assert _teams(alice) == {"Research": ("member", False)}
    # A hand-made membership is not taken over (nor its role changed) by a rule.
    gpu.members.add(alice)
    GroupRule.apply(alice, [], "ldap")
    assert _teams(alice)["GPU"] == ("member", False)


def test_the_higher_role_wins_and_follows_the_groups(alice: Any, gpu: Team) -> None:
    GroupRule.objects.create(group="gpu-users", team=gpu)
    GroupRule.objects.create(
        group="gpu-leads", team=gpu, team_role=Membership.Role.ADMIN
    )
    GroupRule.apply(alice, ["gpu-users", "gpu-leads"], "oidc")
    assert _teams(alice) == {"GPU": ("admin", True)}
    assert list(gpu.admins()) == [alice]
    GroupRule.apply(alice, ["gpu-users"], "oidc")
    assert _teams(alice) == {"GPU": ("member", True)}


def test_rules_apply_only_to_their_source(alice: Any, gpu: Team) -> None:
    GroupRule.objects.create(group="gpu-users", team=gpu, source="ldap")
    GroupRule.apply(alice, ["gpu-users"], "oidc")
    assert _teams(alice) == {}
    GroupRule.apply(alice, ["gpu-users"], "ldap")
    assert _teams(alice) == {"GPU": ("member", True)}


def test_staff_comes_and_goes_with_a_staff_rule(alice: Any, admin_user: Any) -> None:
    GroupRule.objects.create(group="chat-admins", makes_staff=True)
    applied = GroupRule.apply(alice, ["chat-admins"], "oidc")
    alice.refresh_from_db()
    assert alice.is_staff and applied.staff == (False, True)
    applied = GroupRule.apply(alice, [], "oidc")
    alice.refresh_from_db()
    assert not alice.is_staff and applied.staff == (True, False)
    # A superuser is never demoted by a sign-in.
    GroupRule.apply(admin_user, [], "oidc")
    admin_user.refresh_from_db()
    assert admin_user.is_staff and admin_user.is_superuser


def test_without_a_staff_rule_staff_is_left_as_set(alice: Any, gpu: Team) -> None:
    GroupRule.objects.create(group="gpu-users", team=gpu)
    alice.is_staff = True
    alice.save()
    GroupRule.apply(alice, [], "oidc")
    alice.refresh_from_db()
    assert alice.is_staff
