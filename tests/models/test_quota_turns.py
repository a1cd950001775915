"""Quotas where a turn begins: checked before the model is asked (nothing
stored when refused), the tokens an answer may use held at admission and
settled at its end, and the last answer of a quota taken once by two turns at
once. Counting and warnings: test_quotas.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chat.models import (
    Conversation,
    Membership,
    Message,
    SiteDefaults,
    Team,
    quotas,
    turn_rows,
)
from tests.models.quota_usage import answered, conversation_of, site_limits

pytestmark = pytest.mark.django_db


# Enforced when a turn begins: nothing is stored, the model is not asked.


@pytest.fixture
def over_quota(alice, profile) -> Conversation:
    """Alice's conversation, with her one answer of the day used."""
    site_limits(user_answers=1)
    own = conversation_of(alice, profile)
    answered(own, at=datetime.now(UTC))
    return own


def test_a_turn_over_quota_is_refused_and_nothing_stored(over_quota):
    before = Message.objects.count()
    with pytest.raises(quotas.QuotaReached, match="resets at 00:00 UTC"):
        turn_rows.begin_turn(over_quota, "One more")
    assert Message.objects.count() == before


def test_a_regenerate_over_quota_keeps_the_last_answer(over_quota):
    with pytest.raises(quotas.QuotaReached):
        turn_rows.begin_regenerate(over_quota)
    assert not Message.objects.filter(replaced=True).exists()
    assert over_quota.messages.count() == 2


def test_an_edit_over_quota_keeps_the_question(over_quota):
    question = over_quota.messages.get(role=Message.Role.USER)
    with pytest.raises(quotas.QuotaReached):
        turn_rows.begin_edit(over_quota, question.pk, "Changed")
    question.refresh_from_db()
    assert question.content == "a question" and not question.replaced


def test_a_team_over_quota_refuses_its_members_turns(alice, bob, profile):
    team = Team.objects.create(name="GPU", team_answers=1)
    Membership.objects.create(team=team, user=alice)
    Membership.objects.create(team=team, user=bob)
    answered(conversation_of(alice, profile), at=datetime.now(UTC))
    with pytest.raises(quotas.QuotaReached, match="team GPU"):
        turn_rows.begin_turn(conversation_of(bob, profile), "Hello")


def test_under_quota_a_turn_begins(alice, profile):
    site_limits(user_answers=2)
    own = conversation_of(alice, profile)
    answered(own, at=datetime.now(UTC))
    turn = turn_rows.begin_turn(own, "Hello")
    assert turn.answer.status == Message.Status.STREAMING


def test_zero_means_no_limit(alice, profile):
    site_limits(user_answers=0, user_output_tokens=0)
    Team.objects.create(name="GPU").members.add(alice)
    own = conversation_of(alice, profile)
    answered(own, tokens=10**6, at=datetime.now(UTC))
    turn_rows.begin_turn(own, "Hello")


def test_over_quota_there_is_no_next_model_to_preload(over_quota, profile):
    assert Conversation.next_model(over_quota.pk) is None
    SiteDefaults.objects.update(user_answers=0)
    assert Conversation.next_model(over_quota.pk) == profile


# Reserved at admission, settled at the end: a running answer's tokens are not
# known yet, so it holds what it may use (and asks the model for no more).


def test_a_running_answer_holds_what_the_limit_leaves(alice, profile):
    site_limits(user_output_tokens=1000)
    answered(conversation_of(alice, profile), tokens=100, at=datetime.now(UTC))
    turn = turn_rows.begin_turn(conversation_of(alice, profile), "Hello")
    assert turn.answer.reserved_tokens == 900
    assert turn.options is not None and turn.options["num_predict"] == 900
    [limit] = quotas.limits_for(alice)
    assert (limit.used, limit.allowed) == (1000, 1000)
    with pytest.raises(quotas.QuotaReached, match=r"\(1,000 of 1,000 output tokens\)"):
        turn_rows.begin_turn(conversation_of(alice, profile), "Meanwhile")


def test_an_answer_asked_for_fewer_tokens_holds_only_those(alice, profile):
    site_limits(user_output_tokens=1000)
    profile.options = {"num_predict": 300}
    profile.save()
    for _ in range(3):
        turn = turn_rows.begin_turn(conversation_of(alice, profile), "Hello")
        assert turn.answer.reserved_tokens == 300
    last = turn_rows.begin_turn(conversation_of(alice, profile), "The rest")
    assert last.answer.reserved_tokens == 100
    assert last.options is not None and last.options["num_predict"] == 100
    with pytest.raises(quotas.QuotaReached):
        turn_rows.begin_turn(conversation_of(alice, profile), "One too many")


def test_an_answer_holds_no_more_than_its_context_leaves(alice, profile):
    """Under a large limit an answer does not hold it all: other answers of
    the user (or their team) still begin beside it."""
    site_limits(user_output_tokens=10**6)
    turn = turn_rows.begin_turn(conversation_of(alice, profile), "Hello")
    prompt = turn.answer.prompt_tokens_estimate
    assert prompt and turn.answer.reserved_tokens == profile.context_length - prompt
    assert turn_rows.begin_turn(conversation_of(alice, profile), "Beside it").answer.pk


def test_the_tightest_limit_sets_the_reservation(alice, bob, profile):
    site_limits(user_output_tokens=1000)
    team = Team.objects.create(name="GPU", team_output_tokens=500)
    Membership.objects.create(team=team, user=alice)
    Membership.objects.create(team=team, user=bob)
    answered(conversation_of(bob, profile), tokens=200, at=datetime.now(UTC))
    turn = turn_rows.begin_turn(conversation_of(alice, profile), "Hello")
    assert turn.answer.reserved_tokens == 300
    with pytest.raises(quotas.QuotaReached, match="team GPU"):
        turn_rows.begin_turn(conversation_of(bob, profile), "Hello")


def test_without_a_token_limit_nothing_is_reserved(alice, profile):
    site_limits(user_answers=5)
    turn = turn_rows.begin_turn(conversation_of(alice, profile), "Hello")
    assert turn.answer.reserved_tokens == 0
    assert turn.options is not None and "num_predict" not in turn.options


@pytest.mark.parametrize(
    ("end", "used"),
    [
        ({"status": Message.Status.DONE, "output_tokens": 120}, 120),
        ({"status": Message.Status.STOPPED, "content": "x" * 40}, 10),
        ({"status": Message.Status.ERROR, "content": "x" * 80}, 20),
    ],
    ids=["done", "stopped", "failed"],
)
def test_the_end_settles_at_what_the_answer_used(alice, profile, end, used):
    site_limits(user_output_tokens=1000)
    turn = turn_rows.begin_turn(conversation_of(alice, profile), "Hello")
    Message.objects.filter(pk=turn.answer.pk).update(content="x" * 8)
    # While it runs: the reservation, however little it wrote.
    assert quotas.limits_for(alice)[0].used == 1000
    Message.objects.filter(pk=turn.answer.pk).update(**end)
    assert quotas.limits_for(alice)[0].used == used
    assert turn_rows.begin_turn(
        conversation_of(alice, profile), "Next"
    ).answer.reserved_tokens


def test_a_dead_process_answer_gives_its_reservation_back(alice, profile):
    """The orphan sweep (`Runner.sweep_orphans`) marks the answer a dead
    process left streaming interrupted: it counts what it wrote, no more."""
    site_limits(user_output_tokens=1000)
    turn = turn_rows.begin_turn(conversation_of(alice, profile), "Hello")
    Message.objects.filter(pk=turn.answer.pk).update(content="x" * 400)
    assert quotas.limits_for(alice)[0].used == 1000
    assert Message.objects.mark_orphans_interrupted(older_than=timedelta(0)) == 1
    assert quotas.limits_for(alice)[0].used == 100


def test_a_running_answer_that_wrote_more_than_it_held_counts_what_it_wrote(
    alice, profile
):
    """A model server that ignores the limit it was given: counted as written."""
    site_limits(user_output_tokens=1000)
    profile.options = {"num_predict": 10}
    profile.save()
    turn = turn_rows.begin_turn(conversation_of(alice, profile), "Hello")
    assert turn.answer.reserved_tokens == 10
    Message.objects.filter(pk=turn.answer.pk).update(content="x" * 400)
    assert quotas.limits_for(alice)[0].used == 100


# Two turns at once (two tabs, two processes): the check and the answer it lets
# in are one step, so the last answer of a quota is taken once.


@pytest.mark.django_db(transaction=True)
def test_two_turns_at_once_cannot_both_take_the_last_answer(alice, profile):
    import threading

    from django.db import connection, connections, transaction

    from tests.support.waiting import until_sync

    if connection.vendor != "postgresql":
        pytest.skip(
            "waits on PostgreSQL's row locks (the PostgreSQL run has this test)"
        )
    site_limits(user_answers=1)
    first, second = conversation_of(alice, profile), conversation_of(alice, profile)
    began, release = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def hold_a_turn() -> None:
        try:
            with transaction.atomic():
                turn_rows.begin_turn(first, "first tab")
                began.set()
                release.wait(timeout=30)
        finally:
            connections.close_all()

    def second_turn() -> None:
        try:
            turn_rows.begin_turn(Conversation.objects.get(pk=second.pk), "second tab")
            outcome["result"] = "began"
        except quotas.QuotaReached as exc:
            outcome["result"] = exc
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_a_turn)
    holder.start()
    assert began.wait(timeout=30)
    other = threading.Thread(target=second_turn)
    other.start()

    def waiting_on_a_lock() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            return cursor.fetchone()[0] > 0

    # The second turn waits for the first's commit (or, were it not made to
    # wait, is already over).
    until_sync(
        lambda: "result" in outcome or waiting_on_a_lock(), "the second turn waits"
    )
    release.set()
    holder.join(timeout=30)
    other.join(timeout=30)
    assert isinstance(outcome["result"], quotas.QuotaReached)
    assert Message.objects.filter(role=Message.Role.ASSISTANT).count() == 1
