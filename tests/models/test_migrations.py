"""Migrations that move data keep it."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE_MEMBERSHIPS = [("chat", "0007_site_default_is_the_oldest_profile")]
WITH_MEMBERSHIPS = [("chat", "0008_identity_access_quotas")]


@pytest.mark.django_db(transaction=True)
def test_team_members_become_memberships_with_every_row_kept() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE_MEMBERSHIPS)
    old = executor.loader.project_state(BEFORE_MEMBERSHIPS).apps
    user_model: Any = old.get_model("auth", "User")
    team_model: Any = old.get_model("chat", "Team")
    alice = user_model.objects.create(username="alice")
    bob = user_model.objects.create(username="bob")
    team = team_model.objects.create(name="GPU")
    team.members.add(alice, bob)
    try:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(WITH_MEMBERSHIPS)
        new = executor.loader.project_state(WITH_MEMBERSHIPS).apps
        memberships = new.get_model("chat", "Membership").objects.order_by("user_id")
        assert [(m.user_id, m.team_id, m.role, m.synced) for m in memberships] == [
            (alice.pk, team.pk, "member", False),
            (bob.pk, team.pk, "member", False),
        ]
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
