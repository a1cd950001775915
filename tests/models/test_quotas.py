"""Quotas: counted from the stored answers, refused with when they reset,
warned of from 80 % (the quiet line near the composer). Where a turn begins:
test_quota_turns.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from chat.models import Message, QuotaPeriod, Team, quotas
from tests.models.quota_usage import DAY, NOW, answered, conversation_of, site_limits

pytestmark = pytest.mark.django_db


# Counting.


def test_no_limits_set_means_none_apply(alice, profile):
    answered(conversation_of(alice, profile), tokens=10**6)
    assert quotas.limits_for(alice, NOW) == []
    quotas.check(alice, NOW)
    assert quotas.warnings(alice, NOW) == []


def test_tokens_are_the_servers_count_else_the_estimate(alice, profile):
    site_limits(user_output_tokens=1000)
    own = conversation_of(alice, profile)
    answered(own, tokens=100)
    answered(own, content="x" * 40)  # no count: 40 characters over 4
    [limit] = quotas.limits_for(alice, NOW)
    assert (limit.kind, limit.used, limit.allowed) == (quotas.TOKENS, 110, 1000)


def test_an_estimate_never_counts_more_than_the_answers_reservation(alice, profile):
    # Cut or interrupted without the server's count: the server was told to
    # write at most its reservation, whatever its characters over 4 say.
    site_limits(user_output_tokens=1000)
    own = conversation_of(alice, profile)
    cut = answered(own, content="x" * 2000, status=Message.Status.INTERRUPTED)
    short = answered(own, content="x" * 40, status=Message.Status.STOPPED)
    Message.objects.filter(pk__in=[cut.pk, short.pk]).update(reserved_tokens=300)
    [limit] = quotas.limits_for(alice, NOW)
    assert limit.used == 300 + 10


def test_only_answers_of_this_period_count(alice, profile):
    site_limits(user_answers=5)
    own = conversation_of(alice, profile)
    answered(own, at=datetime(2026, 3, 13, 23, 59, tzinfo=UTC))  # yesterday
    answered(own, at=datetime(2026, 3, 14, 0, 0, tzinfo=UTC))
    answered(own, at=datetime(2026, 3, 15, 0, 0, tzinfo=UTC))  # tomorrow
    [limit] = quotas.limits_for(alice, NOW)
    assert limit.used == 1
    assert limit.resets_at == datetime(2026, 3, 15, tzinfo=UTC)


def test_a_month_period_counts_the_whole_month(alice, profile):
    site_limits(user_answers=5, quota_period=QuotaPeriod.MONTH)
    answered(conversation_of(alice, profile), at=datetime(2026, 3, 1, tzinfo=UTC))
    [limit] = quotas.limits_for(alice, NOW)
    assert limit.used == 1
    assert limit.resets_at == datetime(2026, 4, 1, tzinfo=UTC)


def test_an_answer_refused_before_its_first_word_does_not_count(alice, profile):
    site_limits(user_answers=5)
    own = conversation_of(alice, profile)
    answered(own, content="", status=Message.Status.ERROR)
    answered(own, content="half an answer", status=Message.Status.ERROR)
    answered(own, content="", status=Message.Status.STOPPED)
    [limit] = quotas.limits_for(alice, NOW)
    assert limit.used == 2


def test_other_peoples_answers_do_not_count_for_a_user(alice, bob, profile):
    site_limits(user_answers=1)
    answered(conversation_of(bob, profile))
    quotas.check(alice, NOW)
    with pytest.raises(quotas.QuotaReached):
        quotas.check(bob, NOW)


def test_a_team_quota_counts_every_members_answers(alice, bob, profile):
    team = Team.objects.create(name="GPU", team_answers=2)
    # On the team before NOW: a team counts its members' answers from when
    # they joined (test_a_team_quota_counts_from_joining).
    team.members.add(alice, bob, through_defaults={"joined_at": NOW - DAY})
    answered(conversation_of(alice, profile))
    quotas.check(bob, NOW)
    answered(conversation_of(bob, profile))
    for user in (alice, bob):
        with pytest.raises(quotas.QuotaReached, match="Your team GPU's quota"):
            quotas.check(user, NOW)


def test_a_team_quota_counts_from_joining(alice, bob, profile):
    team = Team.objects.create(name="GPU", team_answers=1)
    team.members.add(alice, through_defaults={"joined_at": NOW - DAY})
    hour = timedelta(hours=1)
    team.members.add(bob, through_defaults={"joined_at": NOW - hour})
    # The same day, before bob joined: not the team's.
    answered(conversation_of(bob, profile), at=NOW - 2 * hour)
    quotas.check(alice, NOW)
    answered(conversation_of(bob, profile))
    with pytest.raises(quotas.QuotaReached, match="Your team GPU's quota"):
        quotas.check(alice, NOW)


def test_a_team_member_limit_applies_to_each_member(alice, bob, profile):
    team = Team.objects.create(name="GPU", member_output_tokens=50)
    team.members.add(alice, bob)
    answered(conversation_of(alice, profile), tokens=50)
    with pytest.raises(quotas.QuotaReached, match=r"Your quota is reached \(50 of"):
        quotas.check(alice, NOW)
    quotas.check(bob, NOW)


def test_the_message_says_when_it_resets(alice, profile):
    site_limits(user_answers=1)
    answered(conversation_of(alice, profile))
    with pytest.raises(quotas.QuotaReached) as refused:
        quotas.check(alice, NOW)
    assert str(refused.value) == (
        "Your quota is reached (1 of 1 answers); it resets at 00:00 UTC."
    )


def test_a_monthly_message_names_the_day(alice, profile):
    site_limits(user_answers=1, quota_period=QuotaPeriod.MONTH)
    answered(conversation_of(alice, profile))
    with pytest.raises(quotas.QuotaReached, match="resets at 00:00 UTC on 01 Apr"):
        quotas.check(alice, NOW)


def test_warnings_start_at_eighty_percent(alice, profile):
    site_limits(user_answers=5)
    own = conversation_of(alice, profile)
    for _ in range(3):
        answered(own)
    assert quotas.warnings(alice, NOW) == []
    answered(own)
    [warning] = quotas.warnings(alice, NOW)
    assert warning.warning() == (
        "Your quota is 80% used (4 of 5 answers); it resets at 00:00 UTC."
    )
    answered(own)
    [warning] = quotas.warnings(alice, NOW)
    assert warning.warning().startswith("Your quota is reached (5 of 5 answers)")


# The quiet line near the composer.


def test_the_composer_line_shows_from_eighty_percent(alice_client, alice, profile):
    site_limits(user_answers=5)
    own = conversation_of(alice, profile)
    for _ in range(3):
        answered(own, at=datetime.now(UTC))
    html = alice_client.get(own.get_absolute_url()).content.decode()
    assert 'id="quota-line" data-url="/quota/line/" hidden></p>' in html
    answered(own, at=datetime.now(UTC))
    html = alice_client.get(own.get_absolute_url()).content.decode()
    assert (
        '<p class="quota-line" id="quota-line" data-url="/quota/line/"><span>'
        "Your quota is 80% used "
        "(4 of 5 answers); it resets at 00:00 UTC.</span></p>"
    ) in html


def test_the_composer_line_names_each_limit_near_its_end(alice_client, alice, profile):
    site_limits(user_output_tokens=100)
    team = Team.objects.create(name="GPU", team_answers=1)
    team.members.add(alice)
    own = conversation_of(alice, profile)
    answered(own, tokens=90, at=datetime.now(UTC))
    html = alice_client.get(own.get_absolute_url()).content.decode()
    assert "Your quota is 90% used (90 of 100 output tokens)" in html
    assert "Your team GPU&#x27;s quota is reached (1 of 1 answers)" in html


def test_the_line_is_fetched_again_after_an_answer(alice_client, alice, profile):
    site_limits(user_answers=5)
    own = conversation_of(alice, profile)
    url = reverse("quota_line")
    assert alice_client.get(url).content.decode().strip().endswith("hidden></p>")
    for _ in range(5):
        answered(own, at=datetime.now(UTC))
    html = alice_client.get(url).content.decode()
    assert "Your quota is reached (5 of 5 answers)" in html


def test_the_line_is_for_signed_in_users(client, db):
    assert client.get(reverse("quota_line")).status_code == 302


# Between the model calls of a turn with tools (`recheck`).


def test_recheck_counts_the_turns_own_calls_and_tokens_not_its_row(alice, profile):
    site_limits(user_output_tokens=1000, user_answers=5)
    own = conversation_of(alice, profile)
    now = timezone.now()
    answered(own, tokens=300, at=now)  # another answer: 1 call, 300 tokens
    running = answered(own, status=Message.Status.STREAMING, at=now)
    Message.objects.filter(pk=running.pk).update(reserved_tokens=700, model_calls=1)
    # Its row's reservation would leave nothing; its 200 tokens spent leave 500.
    left = quotas.recheck(running.pk, alice.pk, calls=1, spent=200, wanted=600)
    assert left == 500
    running.refresh_from_db()
    assert running.reserved_tokens == 200 + 500  # answers asked now count it
    assert quotas.recheck(running.pk, alice.pk, calls=1, spent=200, wanted=100) == 100


def test_recheck_refuses_a_call_over_a_limit(alice, profile):
    site_limits(user_output_tokens=1000, user_answers=3)
    own = conversation_of(alice, profile)
    now = timezone.now()
    answered(own, tokens=300, at=now)
    running = answered(own, status=Message.Status.STREAMING, at=now)
    with pytest.raises(quotas.QuotaReached) as tokens:
        quotas.recheck(running.pk, alice.pk, calls=1, spent=700, wanted=None)
    assert str(tokens.value).startswith(
        "Your quota is reached (1,000 of 1,000 output tokens)"
    )
    with pytest.raises(quotas.QuotaReached) as answers:
        quotas.recheck(running.pk, alice.pk, calls=2, spent=0, wanted=None)
    assert str(answers.value).startswith("Your quota is reached (3 of 3 answers)")
    running.refresh_from_db()
    assert running.reserved_tokens == 0  # nothing reserved when refused


def test_recheck_without_a_token_limit_leaves_the_call_as_it_was(alice, profile):
    site_limits(user_answers=5)
    running = answered(
        conversation_of(alice, profile),
        status=Message.Status.STREAMING,
        at=timezone.now(),
    )
    assert quotas.recheck(running.pk, alice.pk, calls=4, spent=10**6, wanted=50) is None
