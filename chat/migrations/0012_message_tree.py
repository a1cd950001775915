"""Conversations become trees: each message gets its parent, and a turn's
versions (today's `version_of` links) become siblings under one parent."""

from __future__ import annotations

from typing import Any

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


def parents_from_versions(apps: Any, schema_editor: Any) -> None:
    """Until now only the last turn could get versions, so a conversation's rows
    in id order read: a turn's question, its answer, then (for each regenerate
    or edit) another question marked `version_of` the turn's first, and its
    answer. Hence:
    - an answer (or an asker's history row) follows the row just before it;
    - a version's question has its turn's first question's parent;
    - any other question follows the last row before it still shown (the turn
      it came after was frozen from then on, its shown version included).
    Rows kept off the branch stay so, and sort after the shown one when the
    branch below a turn is chosen again (`shown_at`)."""
    message_model = apps.get_model("chat", "Message")
    # Every row, replaced too (the historical model has no `objects`).
    messages = message_model._base_manager
    rows = messages.order_by("conversation_id", "pk").values_list(
        "pk", "conversation_id", "role", "replaced", "version_of_id", "created_at"
    )
    now = django.utils.timezone.now()
    conversation: int | None = None
    parents: dict[int, int | None] = {}  # the conversation's so far
    previous: int | None = None
    last_shown: int | None = None
    batch: list[Any] = []
    for pk, conversation_id, role, replaced, version_of_id, created_at in rows.iterator(
        chunk_size=2000
    ):
        if conversation_id != conversation:
            conversation, parents, previous, last_shown = (
                conversation_id,
                {},
                None,
                None,
            )
        if role == "assistant":
            parent = previous
        elif version_of_id in parents:
            parent = parents[version_of_id]
        else:
            parent = last_shown
        parents[pk] = parent
        previous = pk
        if not replaced:
            last_shown = pk
        row = message_model(
            pk=pk, parent_id=parent, shown_at=created_at if replaced else now
        )
        batch.append(row)
        if len(batch) >= 1000:
            messages.bulk_update(batch, ["parent", "shown_at"])
            batch = []
    messages.bulk_update(batch, ["parent", "shown_at"])


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0011_message_written_by_asker"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="parent",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="children",
                to="chat.message",
            ),
        ),
        migrations.AddField(
            model_name="message",
            name="shown_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.RunPython(parents_from_versions, migrations.RunPython.noop),
        migrations.RemoveField(model_name="message", name="version_of"),
    ]
