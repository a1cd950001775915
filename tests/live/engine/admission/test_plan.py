"""The admission decision itself (`chat.live.engine.admission.plan`, no database):
the model's slots, the per-user limit and the fair queue's order."""

from __future__ import annotations

from chat.live.engine.admission import Entry, plan


def entry(
    message_id: int,
    user: int,
    profile: int = 1,
    served: int | None = None,
    live: bool = True,
) -> Entry:
    return Entry(message_id, user, profile, served, live)


def test_plan_admits_up_to_the_model_slots_and_numbers_the_rest():
    decided = plan([entry(1, 10), entry(2, 11), entry(3, 12)], 0, {1: 1})
    assert decided.admit == [1]
    assert decided.positions == {2: 1, 3: 2}


def test_plan_round_robins_across_users_and_keeps_each_users_order():
    # Alice runs one and queued three; Bob then Carol asked once each.
    entries = [entry(1, 10, served=1), entry(2, 10), entry(3, 10)]
    entries += [entry(4, 11), entry(5, 10), entry(6, 12)]
    decided = plan(entries, 0, {1: 1})
    assert decided.admit == []
    assert decided.positions == {4: 1, 6: 2, 2: 3, 3: 4, 5: 5}


def test_plan_serves_the_user_served_longest_ago_first():
    # Alice's first answer just finished; her second asked before Bob's first.
    entries = [entry(1, 10, served=1, live=False), entry(2, 10), entry(3, 11)]
    entries += [entry(4, 12, served=2, live=False), entry(5, 12)]
    decided = plan(entries, 0, {1: 1})
    assert decided.admit == [3]
    assert decided.positions == {2: 1, 5: 2}


def test_plan_finished_answers_hold_no_slot():
    entries = [entry(1, 10, served=1, live=False), entry(2, 11, served=2, live=False)]
    decided = plan([*entries, entry(3, 10)], 1, {1: 1})
    assert decided.admit == [3] and decided.positions == {}


def test_plan_per_user_limit_counts_every_model_and_skips_to_the_next_user():
    entries = [entry(1, 10, profile=2, served=1), entry(2, 10), entry(3, 11)]
    decided = plan(entries, 1, {1: 0, 2: 0})
    assert decided.admit == [3]
    assert decided.positions == {2: 1}


def test_plan_without_limits_admits_everyone():
    decided = plan([entry(i, 10) for i in range(5)], 0, {1: 0})
    assert decided.admit == list(range(5)) and decided.positions == {}


def test_plan_queues_per_model():
    entries = [entry(1, 10, profile=1), entry(2, 11, profile=1)]
    entries += [entry(3, 12, profile=2), entry(4, 13, profile=2)]
    decided = plan(entries, 0, {1: 1, 2: 1})
    assert decided.admit == [1, 3]
    assert decided.positions == {2: 1, 4: 1}
