"""Tool calls per tool, for the throughput page: calls, failures, duration and
result size per source and tool.

Counted by the database from the audit log's `tool_call` events: one per call
the engine ran (`chat.live.engine.turn.tools._audit`), its detail holding the
answer's id, the source, the tool, the duration (`ms`: the run, and the wait
for the user's approval), the result's size (characters, before any cut) and
the outcome ("ok" or the error's code). Only the calls of the answers the page
counts (`throughput.Window`: its range, user and model) are taken; the JSON
keys are read by the database (`KT`), the same query on PostgreSQL and SQLite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import (
    Avg,
    Count,
    FloatField,
    Q,
    QuerySet,
    Sum,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from chat.models import AuditEvent
from chat.models.audit import called_in
from chat.ops.throughput import PERCENTILES, PercentileCont, Window


def calls(window: Window) -> QuerySet[AuditEvent]:
    """The audited calls of the window's answers."""
    answers = window.answers().values("pk")
    return (
        # A call is made after its answer began: the range's start bounds
        # the events read (`at` is indexed).
        AuditEvent.objects.filter(kind=AuditEvent.Kind.TOOL_CALL, at__gte=window.start)
        .annotate(answer_id=called_in())
        .filter(answer_id__in=answers)
    )


def per_tool(window: Window) -> list[dict[str, Any]]:
    """One row per source and tool: `calls`, `failures` (any outcome but ok),
    `ms_p50`, `ms_p95`, `total_s`, `mean_size`."""
    rows = (
        calls(window)
        .annotate(
            source=KT("detail__source"),
            tool=KT("detail__tool"),
            ms=Cast(KT("detail__ms"), FloatField()),
            size=Cast(KT("detail__size"), FloatField()),
        )
        .values("source", "tool")
        .annotate(
            calls=Count("pk"),
            failures=Count("pk", filter=~Q(detail__outcome="ok")),
            total_s=Sum("ms") / 1000,
            mean_size=Avg("size"),
            **{
                f"ms_{label}": PercentileCont("ms", fraction)
                for label, fraction in PERCENTILES.items()
            },
        )
        .order_by("source", "tool")
    )
    return [dict(row) for row in rows]


CSV_COLUMNS: Sequence[tuple[str, str]] = (
    ("source", "source"),
    ("tool", "tool"),
    ("calls", "calls"),
    ("failures", "failures"),
    ("ms_p50", "duration ms p50"),
    ("ms_p95", "duration ms p95"),
    ("total_s", "total s"),
    ("mean_size", "mean result chars"),
)
