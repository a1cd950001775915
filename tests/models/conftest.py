"""Fixtures of the model tests: a thinking model, a conversation answered, a
small model (the quota tests')."""

from __future__ import annotations

from typing import Any

import pytest

from chat.models import Conversation, ModelProfile


@pytest.fixture
def thinker() -> ModelProfile:
    return ModelProfile.objects.create(
        tag="qwen3:8b",
        base_url="http://127.0.0.1:11434",
        supports_thinking=True,
        context_length=16384,
        options={"temperature": 0.6},
    )


@pytest.fixture
def answered(alice: Any, thinker: ModelProfile) -> Conversation:
    """A conversation of two finished turns."""
    conversation = Conversation.objects.create(owner=alice, title="Kept")
    for question, answer in (("one", "first"), ("two", "second")):
        conversation.messages.create(role="user", content=question, client_id="c")
        conversation.messages.create(role="assistant", content=answer, thinking="t")
    return conversation


@pytest.fixture
def profile() -> ModelProfile:
    return ModelProfile.objects.create(tag="small:1b", base_url="http://gpu-box:1")
