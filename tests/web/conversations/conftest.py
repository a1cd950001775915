"""Fixtures of the conversation page tests: a demo model that thinks, and
alice's conversation with it."""

from __future__ import annotations

import pytest

from chat.models import Conversation, ModelProfile


@pytest.fixture
def profile():
    return ModelProfile.objects.create(
        tag="qwen3-demo:8b",
        base_url="http://127.0.0.1:1",
        supports_thinking=True,
        is_demo=True,
    )


@pytest.fixture
def own(alice, profile):
    return Conversation.objects.create(owner=alice, model_profile=profile, title="Mine")
