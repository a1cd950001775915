"""What the fake Ollama streams (its lines, chunks and last chunk with the
metrics) and what the client reads of it, for the Ollama client's tests."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from chat.upstream import Event, Finished, OllamaClient, UpstreamError
from tests.upstream import mock_clients

BASE = "http://ollama.test:11434"


def line(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"


def chunk(content: str = "", thinking: str | None = None) -> dict[str, Any]:
    message = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    return {"model": "qwen3:8b", "message": message, "done": False}


def done(content: str = "", **fields: Any) -> dict[str, Any]:
    base = {"model": "qwen3:8b", "message": {"role": "assistant", "content": content}}
    return {**base, "done": True, **fields}


METRICS: dict[str, Any] = {
    "done_reason": "stop",
    "total_duration": 4_883_583_458,
    "load_duration": 1_334_875,
    "prompt_eval_count": 26,
    "prompt_eval_duration": 342_546_000,
    "eval_count": 282,
    "eval_duration": 4_535_599_000,
}
FINISHED = Finished(
    done_reason="stop",
    prompt_tokens=26,
    prompt_eval_ms=342.546,
    output_tokens=282,
    eval_ms=4535.599,
    load_ms=1.334875,
    total_ms=4883.583458,
)


async def collect(client: OllamaClient, **kwargs: Any) -> list[list[Event]]:
    return await mock_clients.collect(client, "qwen3:8b", **kwargs)


async def collect_until_error(
    client: OllamaClient,
) -> tuple[list[list[Event]], UpstreamError]:
    batches: list[list[Event]] = []
    with pytest.raises(UpstreamError) as info:
        async for batch in client.chat("qwen3:8b", [], think=None, options={}):
            batches.append(batch)
    return batches, info.value


def refused() -> httpx.ConnectError:
    error = httpx.ConnectError("All connection attempts failed")
    error.__cause__ = ConnectionRefusedError(111, "Connection refused")
    return error
