"""Usage per user and per team on the throughput page (tables and CSV), counted
as the quotas count it."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Message, Team
from chat.ops import throughput
from tests.support.answers import answer

pytestmark = pytest.mark.django_db

THROUGHPUT = reverse("admin_throughput")


@pytest.fixture
def usage(alice, bob, django_user_model):
    """Alice (team GPU): 100 + 40 tokens and an answer refused before its first
    word; Bob (teams GPU and Docs): 20 characters (5 tokens), and one 10 days
    ago; Carol (no team): 7 tokens, running."""
    carol = django_user_model.objects.create_user("carol", password="pw")
    gpu, docs = Team.objects.create(name="GPU"), Team.objects.create(name="Docs")
    gpu.members.add(alice, bob)
    docs.members.add(bob)
    mine = Conversation.objects.create(owner=alice)
    answer(mine, model_tag="a:1b", output_tokens=100, content="x")
    answer(mine, model_tag="b:2b", output_tokens=40, content="x")
    answer(mine, model_tag="a:1b", status=Message.Status.ERROR)  # not counted
    theirs = Conversation.objects.create(owner=bob)
    answer(theirs, model_tag="a:1b", content="y" * 20)
    answer(theirs, ago=timedelta(days=10), model_tag="a:1b", output_tokens=999)
    answer(
        Conversation.objects.create(owner=carol),
        model_tag="a:1b",
        output_tokens=7,
        status=Message.Status.STREAMING,
    )


def window(**fields) -> throughput.Window:
    now = timezone.now()
    return throughput.Window(start=now - timedelta(days=7), end=now, **fields)


def test_usage_per_user(usage, alice):
    assert throughput.usage_by_user(window()) == [
        {"username": "alice", "answers": 2, "output_tokens": 140},
        {"username": "bob", "answers": 1, "output_tokens": 5},
        {"username": "carol", "answers": 1, "output_tokens": 7},
    ]


def test_usage_per_team_counts_each_members_answers(usage):
    assert throughput.usage_by_team(window()) == [
        {"team": "Docs", "answers": 1, "output_tokens": 5},
        {"team": "GPU", "answers": 3, "output_tokens": 145},
    ]


def test_usage_follows_the_pages_user_and_model_filters(usage, alice):
    assert throughput.usage_by_user(window(user_id=alice.pk, model_tag="b:2b")) == [
        {"username": "alice", "answers": 1, "output_tokens": 40}
    ]
    assert throughput.usage_by_team(window(model_tag="b:2b")) == [
        {"team": "GPU", "answers": 1, "output_tokens": 40}
    ]


def test_no_answers_no_rows(db):
    assert throughput.usage_by_user(window()) == []
    assert throughput.usage_by_team(window()) == []


def test_the_page_shows_both_tables(usage, admin_client):
    html = admin_client.get(THROUGHPUT).content.decode()
    assert 'id="usage-users"' in html and 'id="usage-teams"' in html
    assert '<th scope="row">alice</th><td>2</td><td>140</td>' in html
    assert '<th scope="row">GPU</th><td>3</td><td>145</td>' in html
    assert "table=users" in html and "table=teams" in html


def test_the_page_without_answers_says_so(admin_client, db):
    html = admin_client.get(THROUGHPUT).content.decode()
    assert "No answers in this range." in html
    assert "No answers from team members in this range." in html


def rows_of(response) -> list[list[str]]:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    return list(csv.reader(io.StringIO(response.content.decode())))


def test_usage_per_user_as_csv(usage, admin_client):
    response = admin_client.get(THROUGHPUT, {"format": "csv", "table": "users"})
    assert "usage-users-" in response["Content-Disposition"]
    assert rows_of(response) == [
        ["user", "answers", "output tokens"],
        ["alice", "2", "140"],
        ["bob", "1", "5"],
        ["carol", "1", "7"],
    ]


def test_usage_per_team_as_csv(usage, admin_client):
    response = admin_client.get(THROUGHPUT, {"format": "csv", "table": "teams"})
    assert rows_of(response) == [
        ["team", "answers", "output tokens"],
        ["Docs", "1", "5"],
        ["GPU", "3", "145"],
    ]


def test_an_unknown_table_gives_the_per_model_csv(usage, admin_client):
    response = admin_client.get(THROUGHPUT, {"format": "csv", "table": "nope"})
    assert rows_of(response)[0][0] == "model"


def test_a_bad_filter_refuses_the_usage_csv(admin_client, db):
    query = {"format": "csv", "table": "users", "range": "custom"}
    response = admin_client.get(THROUGHPUT, query)
    assert response.status_code == 400
    assert "needs a start and an end" in response.content.decode()


@pytest.mark.parametrize("table", ["users", "teams"])
def test_usage_is_for_staff_only(alice_client, table):
    response = alice_client.get(THROUGHPUT, {"format": "csv", "table": table})
    assert response.status_code == 302
