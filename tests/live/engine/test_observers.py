"""Who hears of a finished answer (`chat.live.engine.observers`): the engine calls its
observers without knowing them; one that fails costs the answer nothing."""

from __future__ import annotations

import pytest

from chat.live.engine import observers
from chat.models import Message


@pytest.fixture
def registered(monkeypatch):
    """The observers list, empty for the test and put back after it."""
    monkeypatch.setattr(observers, "_observers", [])
    return observers._observers


def test_every_observer_hears_each_answer_once(registered):
    heard: list[int] = []
    observers.on_answer_finished(lambda m: heard.append(m.pk))
    observers.on_answer_finished(heard.append)
    observers.on_answer_finished(heard.append)  # the same one again: still once
    observers.answer_finished(Message(pk=5))
    assert heard[0] == 5 and len(heard) == 2


def test_a_failing_observer_costs_the_others_nothing(registered):
    heard: list[Message] = []

    def broken(message: Message) -> None:
        raise RuntimeError("no")

    observers.on_answer_finished(broken)
    observers.on_answer_finished(heard.append)
    observers.answer_finished(Message(pk=6))
    assert [m.pk for m in heard] == [6]


def test_the_operators_counters_are_wired_when_the_app_loads():
    from chat.ops.metrics import observe_answer

    assert observe_answer in observers._observers
