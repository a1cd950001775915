"""The official `openai` client's question to the live server's `/v1` and what
its answer says (the reasoning apart from the answer), beside what the simulator
was scripted to say, for the client's tests."""

from __future__ import annotations

from typing import Any

import openai

from chat.simulator.script import reply_script
from tests.api.conftest import ASK, MODEL


def ask(client: openai.OpenAI, **kwargs: Any) -> Any:
    kwargs.setdefault("model", MODEL)
    kwargs.setdefault("messages", ASK)
    return client.chat.completions.create(**kwargs)


def reasoning(part: Any) -> str:
    """`reasoning_content` of a delta or message (not in the client's types:
    vLLM's and llama.cpp's field, kept by the client as an extra)."""
    return getattr(part, "reasoning_content", None) or ""


def texts(chunks: list[Any]) -> tuple[str, str]:
    """(reasoning, content) of a streamed answer."""
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    return (
        "".join(reasoning(delta) for delta in deltas),
        "".join(delta.content or "" for delta in deltas),
    )


def expected_script(simulator: Any, *, think: bool = True) -> tuple[str, str]:
    """What the simulator says to QUESTION: (thinking, answer)."""
    script = reply_script(simulator.config, ASK, think=think)
    return "".join(script.thinking), "".join(script.content)
