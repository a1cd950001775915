"""A request body read as each dialect (`chat.api.requests`), and the 400 a refused
one raises, for the request tests."""

from __future__ import annotations

from typing import Any

import pytest

from chat.api.errors import ApiError
from chat.api.requests import ollama_chat, openai_chat

MODEL = "qwen3-demo:8b"
QUESTION = [{"role": "user", "content": "Why is the sky blue?"}]


def openai(**fields: Any):
    return openai_chat({"model": MODEL, "messages": QUESTION, **fields})


def ollama(**fields: Any):
    return ollama_chat({"model": MODEL, "messages": QUESTION, **fields})


def refused(call: Any, *args: Any, **kwargs: Any) -> ApiError:
    """The ApiError `call` raises, which must be a 400."""
    with pytest.raises(ApiError) as caught:
        call(*args, **kwargs)
    assert caught.value.status == 400, caught.value
    assert caught.value.code == "invalid_request"
    return caught.value
