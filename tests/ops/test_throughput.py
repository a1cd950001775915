"""The throughput figures, against values computed by hand. Marked `smoke`: they
run on PostgreSQL (`percentile_cont`) and again on SQLite (its Python twin)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat.models import Conversation, Message
from chat.ops.throughput import (
    PercentileCont,
    Window,
    percentile_cont,
    summary,
    timeline,
)
from tests.support.answers import answer

pytestmark = [pytest.mark.smoke, pytest.mark.django_db]


@pytest.fixture
def seeded(alice, bob):
    """Alice's answers from "a:1b" (thinking on: five, off: one), one answer of
    Alice's from three days ago, and Bob's answer from "b:2b"."""
    mine = Conversation.objects.create(owner=alice)
    theirs = Conversation.objects.create(owner=bob)
    on = {"model_tag": "a:1b", "thinking_enabled": True}
    # Decode rates from the server's figures: 10, 40, 20, 30 tok/s.
    answer(mine, **on, output_tokens=10, eval_ms=1000, first_token_ms=100,
           queue_wait_ms=0, prompt_tokens=100, prompt_eval_ms=100)  # fmt: skip
    answer(mine, **on, output_tokens=40, eval_ms=1000, first_token_ms=400,
           queue_wait_ms=0, prompt_tokens=200, prompt_eval_ms=100)  # fmt: skip
    answer(mine, **on, output_tokens=20, eval_ms=1000, first_token_ms=200,
           queue_wait_ms=0)  # fmt: skip
    answer(mine, **on, output_tokens=30, eval_ms=1000, first_token_ms=300,
           queue_wait_ms=10)  # fmt: skip
    # Stopped, no server figures: our clock, 400 characters (~100 tokens) in the
    # 1000 ms after the first token: 100 tok/s.
    answer(mine, **on, status=Message.Status.STOPPED, content="x" * 300,
           thinking="y" * 100, first_token_ms=100, total_ms=1100)  # fmt: skip
    # Failed before any token: counted, no figures.
    answer(mine, **on, status=Message.Status.ERROR, error_code="upstream_error")
    answer(mine, model_tag="a:1b", thinking_enabled=False, output_tokens=50,
           eval_ms=500, first_token_ms=80, total_ms=600)  # fmt: skip
    answer(mine, model_tag="a:1b", thinking_enabled=True, ago=timedelta(days=3),
           output_tokens=1000, eval_ms=1000, first_token_ms=9000)  # fmt: skip
    answer(theirs, model_tag="b:2b", thinking_enabled=None, output_tokens=7,
           eval_ms=1000, first_token_ms=50)  # fmt: skip
    # Still streaming: not counted anywhere.
    answer(mine, **on, status=Message.Status.STREAMING, first_token_ms=1)
    return alice, bob


def window(days=1, **kwargs):
    now = timezone.now()
    return Window(start=now - timedelta(days=days), end=now, **kwargs)


@pytest.mark.parametrize(
    ("values", "fraction", "expected"),
    [
        ([10, 20, 30, 40], 0.5, 25.0),
        ([10, 20, 30, 40], 0.95, 38.5),
        ([40, 10, 100, 30, 20], 0.95, 88.0),
        ([5], 0.95, 5.0),
        ([1, 2], 0.0, 1.0),
        ([1, 2], 1.0, 2.0),
        ([], 0.5, None),
    ],
)
def test_percentile_cont_interpolates_like_postgresql(values, fraction, expected):
    assert percentile_cont(values, fraction) == pytest.approx(expected)


def test_percentile_fraction_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="within"):
        PercentileCont("first_token_ms", 1.5)


def test_percentile_aggregate_in_the_database_skips_nulls(seeded):
    figures = Message.objects.filter(model_tag="a:1b").aggregate(
        p50=PercentileCont("queue_wait_ms", 0.5),
        p95=PercentileCont("queue_wait_ms", 0.95),
        p0=PercentileCont("queue_wait_ms", 0),
    )
    # 0, 0, 0, 10 (the others have no queue wait).
    assert figures == {
        "p50": pytest.approx(0.0),
        "p95": pytest.approx(8.5),
        "p0": pytest.approx(0.0),
    }


def test_summary_per_model_and_thinking(seeded):
    rows = {(r["model_tag"], r["thinking_enabled"]): r for r in summary(window())}
    assert set(rows) == {("a:1b", False), ("a:1b", True), ("b:2b", None)}
    on = rows["a:1b", True]
    assert on["answers"] == 6
    assert on["output_tokens"] == 100
    assert (on["errors"], on["stopped"], on["interrupted"]) == (1, 1, 0)
    # Decode: 10, 20, 30, 40 (server) and 100 (our clock).
    assert on["decode_tps_p50"] == pytest.approx(30.0)
    assert on["decode_tps_p95"] == pytest.approx(88.0)
    # Prompt: 1000 and 2000 tok/s.
    assert on["prompt_tps_p50"] == pytest.approx(1500.0)
    assert on["prompt_tps_p95"] == pytest.approx(1950.0)
    # First token: 100, 100, 200, 300, 400 ms.
    assert on["ttft_ms_p50"] == pytest.approx(200.0)
    assert on["ttft_ms_p95"] == pytest.approx(380.0)
    assert on["queue_ms_p50"] == pytest.approx(0.0)
    assert on["queue_ms_p95"] == pytest.approx(8.5)

    off = rows["a:1b", False]
    assert off["answers"] == 1
    assert off["decode_tps_p50"] == off["decode_tps_p95"] == pytest.approx(100.0)
    assert off["prompt_tps_p50"] is None and off["queue_ms_p95"] is None


def test_own_clock_counts_tokens_when_the_server_gave_no_time(alice):
    conversation = Conversation.objects.create(owner=alice)
    # OpenAI-style usage without timings: 60 tokens in the 2000 ms after the
    # first token.
    answer(conversation, model_tag="c:3b", output_tokens=60, first_token_ms=500,
           total_ms=2500, content="z" * 10_000)  # fmt: skip
    [row] = summary(window())
    assert row["decode_tps_p50"] == pytest.approx(30.0)


def test_range_includes_only_answers_created_in_it(seeded):
    week = {(r["model_tag"], r["thinking_enabled"]): r for r in summary(window(7))}
    assert week["a:1b", True]["answers"] == 7
    assert week["a:1b", True]["output_tokens"] == 1100
    now = timezone.now()
    old = Window(start=now - timedelta(days=4), end=now - timedelta(days=2))
    [row] = summary(old)
    assert (row["model_tag"], row["answers"], row["ttft_ms_p50"]) == (
        "a:1b",
        1,
        pytest.approx(9000.0),
    )


def test_user_and_model_filters(seeded):
    alice, bob = seeded
    [row] = summary(window(user_id=bob.pk))
    assert (row["model_tag"], row["answers"]) == ("b:2b", 1)
    assert row["decode_tps_p50"] == pytest.approx(7.0)
    tags = {r["model_tag"] for r in summary(window(user_id=alice.pk))}
    assert tags == {"a:1b"}
    assert {r["model_tag"] for r in summary(window(model_tag="b:2b"))} == {"b:2b"}


def test_timeline_has_hourly_medians(alice):
    conversation = Conversation.objects.create(owner=alice)
    now = timezone.now()
    this_hour = now.replace(minute=0, second=0, microsecond=0)
    early = now - this_hour + timedelta(hours=3, minutes=30)
    late = now - this_hour + timedelta(hours=1, minutes=30)
    for tokens, ttft in ((10, 100), (30, 300)):
        answer(conversation, ago=early, output_tokens=tokens, eval_ms=1000,
               first_token_ms=ttft)  # fmt: skip
    answer(conversation, ago=late, output_tokens=50, eval_ms=1000, first_token_ms=60)
    points = timeline(window())
    assert [p.at for p in points] == [
        this_hour - timedelta(hours=4),
        this_hour - timedelta(hours=2),
    ]
    assert [p.decode_tps for p in points] == [pytest.approx(20.0), 50.0]
    assert [p.ttft_ms for p in points] == [pytest.approx(200.0), 60.0]


def test_timeline_is_daily_beyond_two_days(alice):
    conversation = Conversation.objects.create(owner=alice)
    answer(conversation, ago=timedelta(days=3), output_tokens=10, eval_ms=1000)
    [point] = timeline(window(days=7))
    assert point.at.hour == 0 and point.at.minute == 0
    assert point.decode_tps == pytest.approx(10.0) and point.ttft_ms is None


def test_percentiles_are_computed_by_the_database(seeded):
    with CaptureQueriesContext(connection) as queries:
        summary(window())
    [query] = queries.captured_queries
    if connection.vendor == "postgresql":
        assert "percentile_cont(0.95) WITHIN GROUP (ORDER BY" in query["sql"]
    else:
        assert "chatsite_percentile_cont(" in query["sql"]
