"""An API answer's tool calls watched from another process: a client's own
tools asked over the API on one Daphne process, the answer's conversation open
in a socket on another. The model's call reaches that socket as the tool
frames (`tool_call`, `tool_args`) through the channel layer
(`fanout.Publisher.add`, which once took every frame for text and failed the
answer with "Internal error: 'tool_call'"), and the answer ends as it should
for the API client and the viewer alike."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from chat.models import ApiKey, Conversation, Message
from tests.api.client_tools import WEATHER
from tests.api.conftest import MODEL
from tests.support.services.daphnes import frames_until, open_socket, until_joined
from tests.support.threads import in_thread
from tests.support.waiting import until

pytestmark = [pytest.mark.django_db(transaction=True)]

QUESTION = "Use get_weather for Paris please"
# Thought before the call, slowly: the viewer joins while the model thinks.
THINKING = " ".join(f"word{i}" for i in range(60))


async def streamed_answer(url: str, key: str) -> list[dict]:
    """The OpenAI chunks of a streamed answer asked with WEATHER."""
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": [WEATHER],
        "stream": True,
    }
    headers = {"Authorization": f"Bearer {key}"}
    chunks = []
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream(
            "POST", f"{url}/v1/chat/completions", json=body, headers=headers
        ) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunks.append(json.loads(line[6:]))
    return chunks


async def test_an_api_answers_tool_call_reaches_a_socket_on_another_process(
    daphnes, alice, demo_profile, session_cookie, simulator
):
    simulator.config.tps = 20
    simulator.config.thinking_text = THINKING
    _, key = await in_thread(ApiKey.issue, alice, "tools")
    cookie = await in_thread(session_cookie, alice)
    asking = asyncio.create_task(
        streamed_answer(f"http://127.0.0.1:{daphnes[0].port}", key)
    )

    async def streaming() -> Message | None:
        return await Message.objects.filter(
            source=Message.Source.API, status=Message.Status.STREAMING
        ).afirst()

    answer = await until(streaming, "no API answer streaming")
    conversation = await Conversation.objects.aget(pk=answer.conversation_id)
    viewer = await open_socket(daphnes[1], conversation, cookie)
    await until_joined(conversation, 1)
    seen = await frames_until(viewer, "done", timeout=30)
    final = await frames_until(viewer, "message")
    await viewer.close()
    chunks = await asyncio.wait_for(asking, 30)

    # The API client got the call (no error event: the answer did not fail).
    assert not [c for c in chunks if "error" in c], chunks[-1]
    calls = [
        call
        for chunk in chunks
        for choice in chunk["choices"]
        for call in choice["delta"].get("tool_calls") or ()
    ]
    call_id = calls[0]["id"]
    arguments = "".join(c["function"].get("arguments") or "" for c in calls)
    assert json.loads(arguments) == {"city": "Paris"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    # The viewer on the other process saw it as tool frames, whole.
    started = [f for f in seen if f["type"] == "tool_call"]
    assert started, [f["type"] for f in seen]
    assert {(f["call_id"], f["name"], f["source"]) for f in started} == {
        (call_id, "get_weather", "client")
    }
    args = [f["delta"] for f in seen if f["type"] == "tool_args"]
    assert "".join(args).endswith(arguments)
    assert not [f for f in seen if f["type"] == "error"]
    assert seen[-1]["status"] == "done"
    assert seen[-1]["stats"]["done_reason"] == "tool_calls"
    stored = await Message.objects.aget(pk=answer.pk)
    assert stored.status == Message.Status.DONE and not stored.error_detail
    assert [p["name"] for p in stored.steps if p["kind"] == "tool"] == ["get_weather"]
    assert final[-1]["message"]["id"] == answer.pk
