"""Answer throughput per model tag: the figures behind the admin's throughput page.

Every figure is computed by the database from the stored answers (one row per
answer, see `Message`). Percentiles use PostgreSQL's `percentile_cont` (continuous:
linear interpolation between the two nearest ranks). SQLite has no such aggregate,
so the same one, written in Python with the same interpolation, is registered on
each SQLite connection: the queries are the same on both databases.

An answer with tools (`chat.live.engine.turn.tools`) made several model calls
with tool runs between them: its `output_tokens` and `eval_ms` add up every
call's, so the server's rate is the model's own; its clock (`total_ms`) holds
the tools' time and the waits for the slot between calls, so no rate is taken
from it. `tool_ms` is its tools' time, apart (the tools per tool:
`chat.ops.tool_use`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import (
    Aggregate,
    Case,
    Count,
    Expression,
    ExpressionWrapper,
    F,
    FloatField,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Cast, Coalesce, Length, TruncDay, TruncHour
from django.db.models.sql.compiler import SQLCompiler

from chat.models import Message, quotas

# Without the server's token count, our own decode rate counts characters and
# takes four of them for a token (the usual estimate for English text).
CHARS_PER_TOKEN = 4
SQLITE_FUNCTION = "chatsite_percentile_cont"


def percentile_cont(values: Iterable[float], fraction: float) -> float | None:
    """The `fraction` percentile of `values`, interpolated as PostgreSQL's
    `percentile_cont` does: position `fraction * (n - 1)` in the sorted values."""
    ordered = sorted(values)
    if not ordered:
        return None
    position = fraction * (len(ordered) - 1)
    lower = math.floor(position)
    upper = math.ceil(position)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


class _SQLitePercentile:
    """`chatsite_percentile_cont(value, fraction)` for SQLite; NULLs are skipped,
    as PostgreSQL skips them."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.fraction = 0.5

    def step(self, value: float | None, fraction: float) -> None:
        self.fraction = fraction
        if value is not None:
            self.values.append(float(value))

    def finalize(self) -> float | None:
        return percentile_cont(self.values, self.fraction)


class PercentileCont(Aggregate):
    """`percentile_cont(fraction) WITHIN GROUP (ORDER BY expression)`."""

    function = "percentile_cont"
    name = "PercentileCont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression: Any, fraction: float, **extra: Any) -> None:
        if not 0 <= fraction <= 1:
            raise ValueError(f"a percentile fraction is within [0, 1], not {fraction}")
        # Formatted here, not user input: a float literal in the SQL.
        super().__init__(expression, fraction=repr(float(fraction)), **extra)

    def as_sqlite(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any
    ) -> Any:
        connection.ensure_connection()
        connection.connection.create_aggregate(SQLITE_FUNCTION, 2, _SQLitePercentile)
        return self.as_sql(
            compiler,
            connection,
            function=SQLITE_FUNCTION,
            template="%(function)s(%(expressions)s, %(fraction)s)",
            **extra,
        )


def _float(expression: Any) -> Any:
    return Cast(expression, FloatField())


def one_model_call() -> Q:
    """Answers whose clock ran over one model call and nothing else: not a
    turn of several calls, nor one whose tools ran (a turn stopped in its
    first tool run made one call)."""
    return Q(model_calls__lte=1) & (Q(tool_ms__isnull=True) | Q(tool_ms__lte=0))


def ran_tools() -> Q:
    return Q(tool_ms__gt=0)


def model_time() -> Expression:
    """The answer's time from its first model request to its end, its tools'
    time taken out (the waits for the slot between its calls are left in)."""
    return ExpressionWrapper(
        F("total_ms") - Coalesce("tool_ms", Value(0.0)), output_field=FloatField()
    )


def decode_rate() -> Expression:
    """Output tokens per second: the server's tokens and decode time when it
    reported both (a turn's calls added up); else our clock, from the first
    token to the end, over its tokens or (without a count) the estimated
    tokens of the text written, but only for an answer of one model call and
    no tool run (else that time holds tool runs and waits)."""
    own_tokens = Case(
        When(output_tokens__gt=0, then=_float(F("output_tokens"))),
        default=_float(Length("content") + Length("thinking")) / CHARS_PER_TOKEN,
        output_field=FloatField(),
    )
    return Case(
        When(
            output_tokens__gt=0,
            eval_ms__gt=0,
            then=_float(F("output_tokens")) * 1000 / F("eval_ms"),
        ),
        When(
            Q(first_token_ms__isnull=False, total_ms__gt=F("first_token_ms"))
            & one_model_call(),
            then=own_tokens * 1000 / (F("total_ms") - F("first_token_ms")),
        ),
        default=Value(None),
        output_field=FloatField(),
    )


def prompt_rate() -> Expression:
    """Prompt tokens per second, from the server's count and evaluation time.
    Not for a turn of several model calls: its `prompt_tokens` are its last
    call's, its `prompt_eval_ms` every call's."""
    return Case(
        When(
            prompt_tokens__gt=0,
            prompt_eval_ms__gt=0,
            model_calls__lte=1,
            then=_float(F("prompt_tokens")) * 1000 / F("prompt_eval_ms"),
        ),
        default=Value(None),
        output_field=FloatField(),
    )


# Per-answer figures that get percentiles: name -> expression.
def _figures() -> dict[str, Any]:
    return {
        "decode_tps": decode_rate(),
        "prompt_tps": prompt_rate(),
        "ttft_ms": F("first_token_ms"),
        "queue_ms": F("queue_wait_ms"),
    }


PERCENTILES = {"p50": 0.5, "p95": 0.95}


@dataclass(frozen=True)
class Window:
    """Which answers to count: finished ones created in [start, end)."""

    start: datetime
    end: datetime
    user_id: int | None = None
    model_tag: str = ""

    def answers(self) -> QuerySet[Message]:
        answers = (
            Message.objects.answers()
            .filter(created_at__gte=self.start, created_at__lt=self.end)
            .exclude(status=Message.Status.STREAMING)
        )
        if self.user_id is not None:
            answers = answers.filter(conversation__owner_id=self.user_id)
        if self.model_tag:
            answers = answers.filter(model_tag=self.model_tag)
        return answers

    @property
    def hourly(self) -> bool:
        """Chart by the hour up to two days, by the day beyond."""
        return self.end - self.start <= timedelta(days=2)


def _percentile_aggregates() -> dict[str, PercentileCont]:
    return {
        f"{name}_{label}": PercentileCont(name, fraction)
        for name in _figures()
        for label, fraction in PERCENTILES.items()
    }


def summary(window: Window) -> list[dict[str, Any]]:
    """One row per model tag and thinking flag (on, off, or None: not asked)."""
    Status = Message.Status
    rows = (
        window.answers()
        .annotate(**_figures())
        .values("model_tag", "thinking_enabled")
        .annotate(
            answers=Count("pk"),
            api_answers=Count("pk", filter=Q(source=Message.Source.API)),
            output_tokens=Sum("output_tokens"),
            errors=Count("pk", filter=Q(status=Status.ERROR)),
            stopped=Count("pk", filter=Q(status=Status.STOPPED)),
            interrupted=Count("pk", filter=Q(status=Status.INTERRUPTED)),
            model_calls=Sum("model_calls"),
            tool_answers=Count("pk", filter=ran_tools()),
            model_s=Sum(model_time()) / 1000,
            tool_s=Sum("tool_ms", filter=ran_tools()) / 1000,
            **_percentile_aggregates(),
        )
        .order_by("model_tag", "thinking_enabled")
    )
    return [dict(row) for row in rows]


@dataclass(frozen=True)
class Point:
    at: datetime
    decode_tps: float | None
    ttft_ms: float | None


def timeline(window: Window) -> list[Point]:
    """Median decode rate and time to first token per hour (or day)."""
    trunc = TruncHour if window.hourly else TruncDay
    figures = _figures()
    rows = (
        window.answers()
        .annotate(bucket=trunc("created_at"), **figures)
        .values("bucket")
        .annotate(
            decode_p50=PercentileCont("decode_tps", 0.5),
            ttft_p50=PercentileCont("ttft_ms", 0.5),
        )
        .order_by("bucket")
    )
    return [Point(row["bucket"], row["decode_p50"], row["ttft_p50"]) for row in rows]


CSV_COLUMNS: Sequence[tuple[str, str]] = (
    ("model_tag", "model"),
    ("thinking_enabled", "thinking"),
    ("answers", "answers"),
    ("api_answers", "API answers"),
    ("output_tokens", "output tokens"),
    ("decode_tps_p50", "decode tok/s p50"),
    ("decode_tps_p95", "decode tok/s p95"),
    ("prompt_tps_p50", "prompt tok/s p50"),
    ("prompt_tps_p95", "prompt tok/s p95"),
    ("ttft_ms_p50", "first token ms p50"),
    ("ttft_ms_p95", "first token ms p95"),
    ("queue_ms_p50", "queue wait ms p50"),
    ("queue_ms_p95", "queue wait ms p95"),
    ("model_calls", "model calls"),
    ("tool_answers", "answers with tools"),
    ("model_s", "model time s"),
    ("tool_s", "tool time s"),
    ("errors", "errors"),
    ("stopped", "stopped"),
    ("interrupted", "interrupted"),
)


def thinking_label(flag: bool | None) -> str:
    return {True: "on", False: "off", None: "n/a"}[flag]


# Usage per user and per team: what the quotas count (`chat.models.quotas`: every
# answer asked, running or not, but one refused before its first word; the
# server's tokens, else the estimate), over the page's window and filters.


def _usage_answers(window: Window) -> QuerySet[Message]:
    answers: QuerySet[Message] = quotas.counted_answers(window.start, window.end)
    if window.user_id is not None:
        answers = answers.filter(conversation__owner_id=window.user_id)
    if window.model_tag:
        answers = answers.filter(model_tag=window.model_tag)
    return answers


def _usage(answers: QuerySet[Message], *group: str) -> list[dict[str, Any]]:
    rows = (
        answers.values(*group)
        .annotate(answers=Count("pk"), output_tokens=Sum(quotas.answer_tokens()))
        .order_by(*group)
    )
    return [
        {**row, "output_tokens": int(round(row["output_tokens"] or 0))} for row in rows
    ]


def usage_by_user(window: Window) -> list[dict[str, Any]]:
    """One row per user with answers: `username`, `answers`, `output_tokens`."""
    rows = _usage(_usage_answers(window), "conversation__owner__username")
    return [
        {"username": row.pop("conversation__owner__username"), **row} for row in rows
    ]


def usage_by_team(window: Window) -> list[dict[str, Any]]:
    """One row per team with answers from its members (now): `team`,
    `answers`, `output_tokens`. Someone on two teams counts in both."""
    key = "conversation__owner__memberships__team__name"
    answers = _usage_answers(window).filter(
        conversation__owner__memberships__isnull=False
    )
    return [{"team": row.pop(key), **row} for row in _usage(answers, key)]


USAGE_CSV_COLUMNS: dict[str, Sequence[tuple[str, str]]] = {
    "users": (
        ("username", "user"),
        ("answers", "answers"),
        ("output_tokens", "output tokens"),
    ),
    "teams": (
        ("team", "team"),
        ("answers", "answers"),
        ("output_tokens", "output tokens"),
    ),
}
