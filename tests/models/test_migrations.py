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


BEFORE_TREES = [("chat", "0011_message_written_by_asker")]
WITH_TREES = [("chat", "0012_message_tree")]


@pytest.mark.django_db(transaction=True)
def test_versions_become_siblings_with_every_row_kept() -> None:
    """Turn 1 regenerated once (its first version shown again), then turn 2
    asked and edited twice (the second edit shown); another conversation
    interleaved."""
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE_TREES)
    old = executor.loader.project_state(BEFORE_TREES).apps
    alice = old.get_model("auth", "User").objects.create(username="alice")
    conversation_model: Any = old.get_model("chat", "Conversation")
    message_model: Any = old.get_model("chat", "Message")
    one = conversation_model.objects.create(owner=alice)
    other = conversation_model.objects.create(owner=alice)
    rows: dict[str, Any] = {}

    def add(name: str, conversation: Any, role: str, **fields: Any) -> None:
        rows[name] = message_model._base_manager.create(
            conversation=conversation, role=role, content=name, **fields
        )

    add("q1", one, "user")
    add("a1", one, "assistant")
    add("x1", other, "user")
    add("q1b", one, "user", replaced=True, version_of=rows["q1"])
    add("a1b", one, "assistant", replaced=True)
    add("q2", one, "user", replaced=True)
    add("a2", one, "assistant", replaced=True)
    add("q2b", one, "user", replaced=True, version_of=rows["q2"])
    add("y1", other, "assistant")
    add("a2b", one, "assistant", replaced=True)
    add("q2c", one, "user", version_of=rows["q2"])
    add("a2c", one, "assistant")
    try:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(WITH_TREES)
        new = executor.loader.project_state(WITH_TREES).apps
        messages = new.get_model("chat", "Message")._base_manager
        parents = {
            m.content: (m.parent.content if m.parent else None, m.replaced)
            for m in messages.select_related("parent")
        }
        assert parents == {
            "q1": (None, False),
            "a1": ("q1", False),
            "q1b": (None, True),
            "a1b": ("q1b", True),
            "q2": ("a1", True),
            "a2": ("q2", True),
            "q2b": ("a1", True),
            "a2b": ("q2b", True),
            "q2c": ("a1", False),
            "a2c": ("q2c", False),
            "x1": (None, False),
            "y1": ("x1", False),
        }
        # A branch left is chosen below its turn after the shown one.
        shown_at = dict(messages.values_list("content", "shown_at"))
        assert shown_at["q2b"] < shown_at["q2c"] and shown_at["q1b"] < shown_at["q1"]
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
