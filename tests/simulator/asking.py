"""The simulator's tests' questions to its Ollama side: its two models and a
chat request read to its last line."""

from __future__ import annotations

import json
from typing import Any

import httpx

THINKER = "qwen3-demo:8b"
PLAIN = "llama-demo:3b"
HELLO = [{"role": "user", "content": "Hello there"}]


def chat_lines(client: httpx.Client, **body: Any) -> list[dict[str, Any]]:
    body.setdefault("model", THINKER)
    body.setdefault("messages", HELLO)
    with client.stream("POST", "/api/chat", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/x-ndjson"
        return [json.loads(line) for line in response.iter_lines() if line]
