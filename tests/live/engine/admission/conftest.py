"""The admission tests' limits (the per-user limit, the model's slots), Alice's and
Bob's conversations on the demo model, and one slot with slow answers."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from chat.models import Conversation, SiteDefaults
from tests.live.engine.admission.queueing import slow_answers


@pytest.fixture
def limits(demo_profile):
    """Set the per-user limit and the model's slots (0: no limit)."""

    def set_limits(per_user: int, slots: int) -> None:
        SiteDefaults(generations_per_user=per_user).save()
        demo_profile.parallel_slots = slots
        demo_profile.save()

    return set_limits


@pytest.fixture
def conversations(demo_profile):
    def make(user, count: int = 1) -> list[Conversation]:
        return [
            Conversation.objects.create(owner=user, model_profile=demo_profile)
            for _ in range(count)
        ]

    return make


@pytest.fixture
def one_slot(alice, limits, conversations, simulator):
    """One model slot, no per-user limit, slow answers: Alice's conversations."""

    async def setup(count: int, **answers: float) -> list[Conversation]:
        await sync_to_async(limits)(0, 1)
        slow_answers(simulator, **answers)
        return await sync_to_async(conversations)(alice, count)

    return setup
