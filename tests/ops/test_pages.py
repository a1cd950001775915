"""The staff pages: throughput per model (table, chart, CSV) and model servers."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Message
from tests.support.answers import answer

pytestmark = pytest.mark.django_db

THROUGHPUT = reverse("admin_throughput")
STAFF_PAGES = [
    THROUGHPUT,
    THROUGHPUT + "?format=csv",
    reverse("admin_model_servers"),
    reverse("admin_model_servers_panel"),
]


@pytest.fixture
def answers(alice, bob):
    """Alice: three "a:1b" answers in the last day (10, 20, 60 tok/s) and one
    five days ago; Bob: one "b:2b" answer."""
    mine = Conversation.objects.create(owner=alice)
    for hours, tokens, ttft in ((1, 10, 100), (1, 20, 200), (5, 60, 600)):
        answer(mine, ago=timedelta(hours=hours), model_tag="a:1b",
               thinking_enabled=True, output_tokens=tokens, eval_ms=1000,
               first_token_ms=ttft)  # fmt: skip
    answer(mine, ago=timedelta(days=5), model_tag="a:1b", thinking_enabled=True,
           output_tokens=5, eval_ms=1000)  # fmt: skip
    theirs = Conversation.objects.create(owner=bob)
    answer(theirs, ago=timedelta(hours=2), model_tag="b:2b", thinking_enabled=False,
           status=Message.Status.ERROR)  # fmt: skip
    return alice, bob


def csv_rows(response) -> list[dict[str, str]]:
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    return list(csv.DictReader(io.StringIO(response.content.decode())))


@pytest.mark.smoke
@pytest.mark.parametrize("url", STAFF_PAGES)
def test_anonymous_is_sent_to_the_admin_login(client, url):
    response = client.get(url)
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert location.path == reverse("admin:login")
    assert parse_qs(location.query) == {"next": [url]}


@pytest.mark.smoke
@pytest.mark.parametrize("url", STAFF_PAGES)
def test_signed_in_non_staff_is_sent_to_the_admin_login(alice_client, url):
    response = alice_client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


@pytest.mark.smoke
def test_admin_index_links_the_pages(admin_client):
    html = admin_client.get(reverse("admin:index")).content.decode()
    assert f'href="{THROUGHPUT}"' in html
    assert f'href="{reverse("admin_model_servers")}"' in html
    assert "Model profiles" in html  # the admin's own list is still there


def test_page_shows_the_last_week_per_model_by_default(admin_client, answers):
    response = admin_client.get(THROUGHPUT)
    assert response.status_code == 200
    html = response.content.decode()
    rows = re.findall(r"<tr>\s*<th scope=\"row\">(.*?)</th>(.*?)</tr>", html, re.S)
    cells = {tag: re.findall(r"<td>(.*?)</td>", rest) for tag, rest in rows}
    # Model, thinking, answers, via the API, output tokens, decode p50, p95, ...
    # 5, 10, 20 and 60 tok/s: p50 15, p95 at 2.85: 20 + 40 * 0.85 = 54.
    assert cells["a:1b"][:6] == ["on", "4", "0", "95", "15.0", "54.0"]
    assert cells["b:2b"][:2] == ["off", "1"]
    assert cells["b:2b"][-3:] == ["1", "0", "0"]  # errors, stopped, interrupted


@pytest.mark.smoke
def test_chart_is_an_svg_with_a_point_per_hour_and_a_table(admin_client, answers):
    html = admin_client.get(THROUGHPUT + "?range=24h").content.decode()
    charts = re.findall(r'<figure class="line-chart">.*?</figure>', html, re.S)
    assert len(charts) == 2
    for chart in charts:
        assert "<svg" in chart and 'role="img"' in chart and "<title" in chart
        # Answers in two hours of the last day: two points, joined by a line.
        assert chart.count("<circle") == 2
        [points] = re.findall(r'<polyline class="series" points="([^"]+)"', chart)
        assert len(points.split()) == 2
    assert "15.0 tok/s" in charts[0] and "60.0 tok/s" in charts[0]
    assert "150.0 ms" in charts[1] and "600.0 ms" in charts[1]
    # The figures again, as a table for screen readers and no-SVG browsers.
    assert "figures as a table" in html
    assert html.count("<td>15.0</td>") == 1  # the median of 10 and 20 tok/s


def test_an_empty_range_says_so(admin_client, answers):
    start = (timezone.now() - timedelta(days=40)).date()
    query = {"range": "custom", "start": start, "end": start}
    html = admin_client.get(THROUGHPUT, query).content.decode()
    assert "No finished answers in this range." in html
    assert "No answers to chart in this range." in html
    assert 'class="line-chart"' not in html


def test_custom_range_counts_whole_days(admin_client, answers):
    day = (timezone.now() - timedelta(days=5)).date()
    query = {"range": "custom", "start": day, "end": day, "format": "csv"}
    [row] = csv_rows(admin_client.get(THROUGHPUT, query))
    assert (row["model"], row["answers"], row["decode tok/s p50"]) == (
        "a:1b",
        "1",
        "5.000",
    )


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({"range": "custom", "start": "2026-01-02"}, "needs a start and an end"),
        (
            {"range": "custom", "start": "2026-01-02", "end": "2026-01-01"},
            "must not be after the end",
        ),
        ({"range": "1y"}, "Select a valid choice"),
    ],
)
def test_a_bad_filter_is_explained(admin_client, answers, query, error):
    response = admin_client.get(THROUGHPUT, query)
    assert response.status_code == 200
    assert error in response.content.decode()
    assert 'class="line-chart"' not in response.content.decode()
    csv_response = admin_client.get(THROUGHPUT, {**query, "format": "csv"})
    assert csv_response.status_code == 400
    assert error in csv_response.content.decode()


def test_user_filter(admin_client, answers):
    _, bob = answers
    rows = csv_rows(admin_client.get(THROUGHPUT, {"user": bob.pk, "format": "csv"}))
    assert [(r["model"], r["thinking"], r["errors"]) for r in rows] == [
        ("b:2b", "off", "1")
    ]


def test_model_filter_offers_the_models_answered(admin_client, answers):
    html = admin_client.get(THROUGHPUT).content.decode()
    assert '<option value="a:1b">' in html and '<option value="b:2b">' in html
    rows = csv_rows(admin_client.get(THROUGHPUT, {"model": "a:1b", "format": "csv"}))
    assert [r["model"] for r in rows] == ["a:1b"]


@pytest.mark.smoke
def test_csv_has_every_column(admin_client, answers):
    response = admin_client.get(THROUGHPUT, {"range": "30d", "format": "csv"})
    header = response.content.decode().splitlines()[0]
    assert header == (
        "model,thinking,answers,API answers,output tokens,decode tok/s p50,"
        "decode tok/s p95,"
        "prompt tok/s p50,prompt tok/s p95,first token ms p50,first token ms p95,"
        "queue wait ms p50,queue wait ms p95,model calls,answers with tools,"
        "model time s,tool time s,errors,stopped,interrupted"
    )
    rows = csv_rows(response)
    a = next(r for r in rows if r["model"] == "a:1b")
    # 5, 10, 20, 60 tok/s: p50 15, p95 at 2.85: 20 + 40 * 0.85 = 54.
    assert (a["answers"], a["output tokens"]) == ("4", "95")
    assert (a["decode tok/s p50"], a["decode tok/s p95"]) == ("15.000", "54.000")
    assert a["prompt tok/s p50"] == ""  # never reported: empty, not 0
    assert a["first token ms p50"] == "200.000"


def test_answers_asked_over_the_api_are_counted_apart(admin_client, answers):
    alice, _ = answers
    scripted = Conversation.objects.create(owner=alice, listed=False)
    answer(scripted, ago=timedelta(hours=1), model_tag="a:1b", thinking_enabled=True,
           output_tokens=30, eval_ms=1000, source=Message.Source.API)  # fmt: skip
    response = admin_client.get(THROUGHPUT, {"format": "csv"})
    a = next(r for r in csv_rows(response) if r["model"] == "a:1b")
    assert (a["answers"], a["API answers"]) == ("5", "1")
    html = admin_client.get(THROUGHPUT).content.decode()
    rows = re.findall(r"<tr>\s*<th scope=\"row\">(.*?)</th>(.*?)</tr>", html, re.S)
    cells = {tag: re.findall(r"<td>(.*?)</td>", rest) for tag, rest in rows}
    assert cells["a:1b"][1:3] == ["5", "1"]  # answers, via the API
