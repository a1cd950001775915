"""Where a turn is admitted (`chat.live.engine.turn.beginning.store`): before its
rows are written, after one trip that locks the site's row first (the lock
order), on a fresh database too, and never in a cycle of waits however many
paths ask at once."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from chat.api import answers
from chat.api.requests import ChatRequest
from chat.live.engine import admission
from chat.live.engine.turn import beginning
from chat.models import ApiKey, Message, SiteDefaults, Ticket
from tests.api.conftest import team_of


@pytest.mark.django_db
def test_an_answer_is_admitted_before_its_rows_are_written(
    alice, bob, limits, conversations
):
    """The decision comes before the turn's rows (docs/latency.md, rule 8): the
    admitted answer is handed on with no id yet, then stored with its ticket,
    and the plan given back names it by its id. One slot: Bob's answer, asked
    while Alice's holds it, waits, placed under its own id."""
    limits(0, 1)
    (first,) = conversations(alice)
    (second,) = conversations(bob)
    heard: list[tuple[object, object, list[int]]] = []

    def admitted(early: beginning.Admitted) -> None:
        turn = early.turn
        heard.append((turn.question.pk, turn.answer.pk, early.plan.admit))

    turn, decided = beginning.store(beginning.Question(first.pk, "first"), admitted)
    assert heard == [(None, None, [admission.UNSTORED])]
    assert decided.admit == [turn.answer.pk] and decided.numbers == {turn.answer.pk: 1}
    assert Ticket.objects.get(message=turn.answer).served == 1
    assert turn.answer.parent_id == turn.question.pk
    waiting, placed = beginning.store(beginning.Question(second.pk, "second"), admitted)
    assert len(heard) == 1  # not admitted: told nobody early
    assert placed.admit == [] and placed.positions == {waiting.answer.pk: 1}
    assert Ticket.objects.get(message=waiting.answer).served is None


@pytest.mark.django_db
def test_a_question_is_admitted_after_one_trip_that_locks_the_sites_row_first(
    alice, limits, conversations
):
    """Before the model server is asked, a sent question reads four things (one
    trip on PostgreSQL, `compiled_queries.together`; Django's query log, on here, has
    them one by one): the site's row locked, first (the lock order of
    `chat.models.admission`), the tickets, the conversation locked with its
    owner, and the messages it follows. The decision reads nothing more."""
    limits(2, 1)
    (conversation,) = conversations(alice)
    asked_after: list[list[str]] = []

    with CaptureQueriesContext(connection) as queries:

        def admitted(early: beginning.Admitted) -> None:
            asked_after.append([q["sql"] for q in queries.captured_queries])

        beginning.store(beginning.Question(conversation.pk, "Hello"), admitted)
    (before,) = asked_after
    # (This test's transaction makes the turn's a savepoint.)
    site, tickets, turn, earlier = [q for q in before if "SAVEPOINT" not in q]
    assert '"chat_sitedefaults"' in site
    assert '"chat_ticket"' in tickets
    assert '"chat_conversation"' in turn
    assert '"chat_message"' in earlier
    if connection.features.has_select_for_update:  # PostgreSQL (not SQLite)
        assert "FOR UPDATE" in site and "FOR UPDATE" in turn


@pytest.mark.smoke
@pytest.mark.django_db
def test_the_first_question_on_a_database_without_the_sites_row_makes_it(
    alice, conversations
):
    """A fresh database has no site's row to lock (`Line.read`): the first
    question makes it with the defaults, locks it and reads the line again,
    and is admitted on it, stored with its ticket."""
    (conversation,) = conversations(alice)
    SiteDefaults.objects.all().delete()
    heard: list[list[int]] = []

    turn, decided = beginning.store(
        beginning.Question(conversation.pk, "first"),
        lambda e: heard.append(e.plan.admit),
    )
    assert heard == [[admission.UNSTORED]]
    assert decided.admit == [turn.answer.pk]
    assert SiteDefaults.objects.get().pk == 1
    assert Ticket.objects.get(message=turn.answer).served == 1


@pytest.mark.django_db
def test_a_regenerate_locks_the_sites_row_first_and_reads_the_line_once(
    alice, limits, conversations
):
    """A retry's transaction locks the site's row before any other (the lock
    order), and its answer is placed on what that first read found: the
    tickets are read once before the model server is asked."""
    limits(2, 1)
    (conversation,) = conversations(alice)
    first, _ = beginning.store(beginning.Question(conversation.pk, "Hello"))
    Message.objects.filter(pk=first.answer.pk).update(status="done")
    asked_after: list[list[str]] = []

    with CaptureQueriesContext(connection) as queries:

        def admitted(early: beginning.Admitted) -> None:
            asked_after.append([q["sql"] for q in queries.captured_queries])

        beginning.store(beginning.Regenerate(conversation.pk), admitted)
    (before,) = asked_after
    sites = [i for i, q in enumerate(before) if 'FROM "chat_sitedefaults"' in q]
    locks = [i for i, q in enumerate(before) if "FOR UPDATE" in q]
    assert len([q for q in before if 'FROM "chat_ticket"' in q]) == 1
    if connection.features.has_select_for_update:  # PostgreSQL (not SQLite)
        assert min(locks) == sites[0]


@pytest.mark.django_db(transaction=True)
def test_answers_asked_at_once_by_every_path_never_wait_in_a_cycle(
    alice, bob, limits, conversations
):
    """Every transaction that admits an answer locks the site's row first
    (`chat.models.admission`, the lock order): a sent question's first trip
    does, before the conversation's, the owner's and the team's rows. Two
    members of one team (their team's row is locked for its quotas) ask at once
    through the socket, a regenerate and the API, round after round: on
    PostgreSQL a path taking the site's row after the others would sooner or
    later hold a row another waits for while waiting for one it holds, and one
    of them would end in a deadlock error."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL's (SQLite has one writer at a time)")
    limits(0, 0)
    team_of("GPU", alice, bob)
    asking, regenerating = conversations(alice)[0], conversations(bob)[0]
    first, _ = beginning.store(beginning.Question(regenerating.pk, "to be asked again"))
    Message.objects.filter(pk=first.answer.pk).update(status="done")
    key, _ = ApiKey.issue(bob, "script")
    model = asking.model_profile.tag
    request = ChatRequest(model, [{"role": "user", "content": "Hi"}], stream=True)
    rounds = 12

    def send() -> int:
        return beginning.store(beginning.Question(asking.pk, "Hello")).turn.answer.pk

    def regenerate() -> int:
        retry, _ = beginning.store(beginning.Regenerate(regenerating.pk))
        return retry.turn.answer.pk

    def api() -> int:
        turn, _ = beginning.store(answers.ask_of(key, request, False))
        return turn.answer.pk

    start = threading.Barrier(3)
    errors: list[str] = []

    def ask(path: Callable[[], int]) -> None:
        try:
            for _ in range(rounds):
                start.wait(timeout=30)
                answer = path()
                # Over before the next round, as the runner would end it.
                Message.objects.filter(pk=answer).update(status="done")
        except Exception as exc:  # reported below
            errors.append(f"{path.__name__}: {type(exc).__name__}: {exc}")
            start.abort()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=ask, args=(p,)) for p in (send, regenerate, api)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert Ticket.objects.filter(served__isnull=False).count() == 1 + 3 * rounds
