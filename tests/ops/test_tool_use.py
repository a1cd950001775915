"""Model time and tool time apart per model, and the table per tool, against
values computed by hand, from answers with tools stored as the engine stores
them (steps, model calls, tool time, an audit event per call). Marked `smoke`:
run on PostgreSQL and again on SQLite."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Message
from chat.ops.throughput import Window, summary
from chat.ops.tool_use import per_tool
from tests.support.answers import answer, tool_answer

pytestmark = [pytest.mark.smoke, pytest.mark.django_db]

ON = {"model_tag": "q:8b", "thinking_enabled": True}


def search(ms, **call):
    return {"source": "web", "tool": "web_search", "ms": ms, **call}


def fetch(ms, **call):
    return {"source": "web", "tool": "web_fetch", "ms": ms, **call}


@pytest.fixture
def seeded(alice, bob):
    mine = Conversation.objects.create(owner=alice)
    # Two model calls, 60 tokens in 2000 ms of decoding (30 tok/s), 500 ms of
    # tools in 5000 ms; the prompt's tokens are the last call's, its time
    # every call's: no prompt rate.
    tool_answer(mine, [search(100, size=1000), fetch(400, size=20000)],
                **ON, output_tokens=60, eval_ms=2000, first_token_ms=100,
                total_ms=5000, prompt_tokens=500, prompt_eval_ms=100)  # fmt: skip
    # Three model calls (40 tok/s); a search that timed out, an MCP tool.
    tool_answer(mine, [search(300, outcome="timeout"),
                       {"source": "mcp:3", "tool": "echo", "name": "everything__echo",
                        "ms": 50, "size": 10}],
                rounds=2, **ON, output_tokens=40, eval_ms=1000, first_token_ms=200,
                total_ms=3000)  # fmt: skip
    # No server figures: our clock's 1000 ms after the first token hold a
    # tool run, so no rate (it would say 1000 tok/s).
    tool_answer(mine, [search(200, size=2000)], **ON, content="x" * 4000,
                first_token_ms=100, total_ms=1100)  # fmt: skip
    # No tools: 10 tok/s, a prompt rate of 1000 tok/s.
    answer(mine, **ON, output_tokens=10, eval_ms=1000, total_ms=2000,
           prompt_tokens=100, prompt_eval_ms=100)  # fmt: skip
    theirs = Conversation.objects.create(owner=bob)
    tool_answer(theirs, [search(1000, size=500)], model_tag="r:1b",
                output_tokens=5, eval_ms=1000, total_ms=3000)  # fmt: skip
    # Three days ago; and still streaming: not in the last day's figures.
    tool_answer(mine, [search(9999)], ago=timedelta(days=3), **ON, total_ms=20000)
    tool_answer(mine, [fetch(7777)], **ON, status=Message.Status.STREAMING)
    return alice, bob


def window(days=1, **kwargs):
    now = timezone.now()
    return Window(start=now - timedelta(days=days), end=now, **kwargs)


def tools(rows):
    return {(row["source"], row["tool"]): row for row in rows}


def test_per_tool_calls_failures_durations_and_sizes(seeded):
    rows = tools(per_tool(window()))
    assert list(rows) == [
        ("mcp:3", "echo"),
        ("web", "web_fetch"),
        ("web", "web_search"),
    ]
    found = rows["web", "web_search"]
    assert (found["calls"], found["failures"]) == (4, 1)
    # 100, 200, 300, 1000 ms: p95 at 2.85, 300 + 700 * 0.85.
    assert found["ms_p50"] == pytest.approx(250.0)
    assert found["ms_p95"] == pytest.approx(895.0)
    assert found["total_s"] == pytest.approx(1.6)
    assert found["mean_size"] == pytest.approx((1000 + 0 + 2000 + 500) / 4)
    fetch = rows["web", "web_fetch"]  # the streaming answer's call left out
    assert (fetch["calls"], fetch["ms_p50"], fetch["mean_size"]) == (1, 400.0, 20000)
    echo = rows["mcp:3", "echo"]
    assert (echo["calls"], echo["failures"], echo["ms_p95"]) == (1, 0, 50.0)


def test_per_tool_follows_the_pages_filters(seeded):
    alice, bob = seeded
    [row] = per_tool(window(user_id=bob.pk))
    assert (row["tool"], row["calls"], row["ms_p50"]) == ("web_search", 1, 1000.0)
    mine = tools(per_tool(window(model_tag="q:8b")))
    assert mine["web", "web_search"]["calls"] == 3
    week = tools(per_tool(window(7)))
    assert week["web", "web_search"]["calls"] == 5
    now = timezone.now()
    assert per_tool(Window(start=now - timedelta(hours=1), end=now)) == []


def test_per_tool_is_one_query_with_the_percentiles_in_it(seeded):
    with CaptureQueriesContext(connection) as queries:
        per_tool(window())
    [query] = queries.captured_queries
    percentile = "percentile_cont(0.95) WITHIN GROUP"
    if connection.vendor == "sqlite":
        percentile = "chatsite_percentile_cont("
    assert percentile in query["sql"]


def test_model_time_and_tool_time_apart_per_model(seeded):
    rows = {row["model_tag"]: row for row in summary(window())}
    mine = rows["q:8b"]
    assert mine["answers"] == 4
    assert (mine["model_calls"], mine["tool_answers"]) == (2 + 3 + 2 + 1, 3)
    assert mine["tool_s"] == pytest.approx((500 + 350 + 200) / 1000)
    # Each answer's time less its tools'.
    model_ms = (5000 - 500) + (3000 - 350) + (1100 - 200) + 2000
    assert mine["model_s"] == pytest.approx(model_ms / 1000)
    # Decode: 10, 30 and 40 tok/s (the server's, the calls added up); none
    # from our clock for the answer whose time held a tool run.
    assert mine["decode_tps_p50"] == pytest.approx(30.0)
    assert mine["decode_tps_p95"] == pytest.approx(39.0)
    # Prompt: only the answer of one model call.
    assert mine["prompt_tps_p50"] == mine["prompt_tps_p95"] == pytest.approx(1000.0)
    theirs = rows["r:1b"]
    assert (theirs["model_calls"], theirs["tool_answers"]) == (2, 1)
    assert (theirs["model_s"], theirs["tool_s"]) == (2.0, 1.0)


def test_a_turn_offered_tools_that_called_none_keeps_its_own_clock(alice):
    conversation = Conversation.objects.create(owner=alice)
    # The engine stores tool_ms 0.0 when tools were offered and none ran:
    # 400 characters (~100 tokens) in the 1000 ms after the first token.
    answer(conversation, model_tag="c:3b", model_calls=1, tool_ms=0.0,
           content="x" * 400, first_token_ms=100, total_ms=1100)  # fmt: skip
    # Stopped in its first tool run: one model call, its clock holds the run.
    tool_answer(conversation, [search(700)], rounds=0, model_tag="c:3b",
                status=Message.Status.STOPPED, content="y" * 400,
                first_token_ms=100, total_ms=1100)  # fmt: skip
    [row] = summary(window())
    assert (row["answers"], row["model_calls"], row["tool_answers"]) == (2, 2, 1)
    assert row["decode_tps_p50"] == row["decode_tps_p95"] == pytest.approx(100.0)
    assert row["tool_s"] == pytest.approx(0.7)
    assert row["model_s"] == pytest.approx((1100 + 400) / 1000)


def test_the_page_and_its_csv_show_the_tools(admin_client, seeded):
    url = reverse("admin_throughput")
    html = admin_client.get(url).content.decode()
    assert 'id="tools"' in html and "table=tools" in html
    assert '<th scope="row">mcp:3</th>' in html and "<td>web_search</td>" in html
    assert "Answers with tools" in html
    day = {"range": "24h", "format": "csv"}
    response = admin_client.get(url, {**day, "table": "tools"})
    assert response["Content-Disposition"].startswith('attachment; filename="tools-')
    lines = response.content.decode().splitlines()
    assert lines[0] == (
        "source,tool,calls,failures,duration ms p50,duration ms p95,total s,"
        "mean result chars"
    )
    assert lines[3] == "web,web_search,4,1,250.000,895.000,1.600,875.000"
    main = admin_client.get(url, day).content.decode().splitlines()
    q8b = next(line for line in main if line.startswith("q:8b,"))
    assert ",8,3,10.050,1.050," in q8b  # model calls, with tools, times


def test_the_page_in_chinese(admin_client, seeded):
    url = reverse("admin_throughput")
    html = admin_client.get(url, headers={"Accept-Language": "zh-hans"})
    text = html.content.decode()
    assert "按工具" in text and "使用工具的回答" in text
