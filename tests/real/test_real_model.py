"""A real model end to end: SmolLM2-135M-Instruct served by llama.cpp.

SmolLM2-135M's text is fluent but not repeatable (even at temperature 0 it
depends on what the KV cache holds), so these tests check the shape of the
stream and what was stored, never the words.

llama-cpp-python's server (0.3.36) streams neither `usage` (it ignores
`stream_options.include_usage`) nor llama.cpp's `timings`: its answers' figures
come from our clock (time to first token, total) and its `finish_reason`.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets

from chat.models import Conversation, Message, ModelProfile
from chat.ops.discovery import fetch_openai_models
from tests.support.threads import in_thread

pytestmark = pytest.mark.real

PROMPT = "Write two sentences about the sea."


def test_the_server_streams_the_model_as_openai_chunks(llm_server):
    body = {
        "model": "smollm2",
        "messages": [{"role": "user", "content": PROMPT}],
        "stream": True,
        "max_tokens": 24,
    }
    pieces, reasons = [], []
    with httpx.stream(
        "POST", llm_server + "/v1/chat/completions", json=body, timeout=120
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choice = json.loads(line[6:])["choices"][0]
            pieces.append(choice["delta"].get("content") or "")
            reasons.append(choice["finish_reason"])
    assert len([p for p in pieces if p]) > 1, "one chunk per token, not one blob"
    assert "".join(pieces).strip()
    assert reasons[-1] in {"stop", "length"}


async def test_discovery_lists_the_served_model(llm_server):
    models = await fetch_openai_models(llm_server)
    assert [m["tag"] for m in models] == ["smollm2"]
    assert models[0]["supports_thinking"] is False


async def _frames_until_final(ws, timeout: float = 180) -> list[dict]:
    """Frames up to the stored assistant message that ends the answer."""
    seen = []
    async with asyncio.timeout(timeout):
        async for raw in ws:
            frame = json.loads(raw)
            seen.append(frame)
            if frame["type"] == "message" and frame["message"]["role"] == "assistant":
                return seen
    raise AssertionError(f"socket closed before the answer ended: {seen[-3:]}")


@pytest.mark.django_db(transaction=True)
async def test_a_chat_through_the_site_streams_and_stores_the_real_answer(
    llm_server, live_server_url, alice, session_cookie
):
    profile = await ModelProfile.objects.acreate(
        tag="smollm2",
        backend=ModelProfile.Backend.OPENAI,
        base_url=llm_server,
        context_length=2048,
        options={"num_predict": 48},
    )
    conversation = await Conversation.objects.acreate(
        owner=alice, model_profile=profile
    )
    cookie = await in_thread(session_cookie, alice)
    ws_url = live_server_url.replace("http", "ws", 1)
    async with websockets.connect(
        f"{ws_url}/ws/conversations/{conversation.pk}/",
        additional_headers={"Cookie": cookie, "Origin": live_server_url},
    ) as ws:
        await ws.send(json.dumps({"type": "send", "content": PROMPT, "client_id": "r"}))
        frames = await _frames_until_final(ws)

    kinds = [f["type"] for f in frames]
    assert "error" not in kinds, [f for f in frames if f["type"] == "error"]
    deltas = [f["delta"] for f in frames if f["type"] == "content"]
    assert len(deltas) > 1, "the answer arrived in pieces, as generated"
    # In order: every content frame comes after the start and before done.
    first, last = kinds.index("content"), len(kinds) - 1 - kinds[::-1].index("content")
    assert kinds.index("start") < first and last < kinds.index("done")

    answer = await Message.objects.aget(
        conversation=conversation, role=Message.Role.ASSISTANT
    )
    streamed = "".join(deltas)
    assert streamed.strip()
    assert answer.status == Message.Status.DONE
    assert answer.content == streamed == frames[-1]["message"]["content"]
    assert answer.model_tag == "smollm2"
    # The figures: time to first token by our clock, and how the server ended
    # (this server streams no token counts: see the module docstring).
    assert answer.first_token_ms is not None and answer.first_token_ms > 0
    assert answer.total_ms is not None and answer.total_ms >= answer.first_token_ms
    assert answer.done_reason in {"stop", "length"}
    done = next(f for f in frames if f["type"] == "done")
    assert done["stats"]["first_token_ms"] == answer.first_token_ms
