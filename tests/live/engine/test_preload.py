from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chat.live.engine import loop_state
from chat.live.protocol import frames
from chat.models import Message, ModelProfile
from chat.sockets import client_frames
from tests.support.communicators import (
    WebsocketCommunicator,
    answer_of,
    connect,
    frames_until,
    send,
)

pytestmark = pytest.mark.django_db(transaction=True)


def model_listed(profile: ModelProfile) -> Any:
    """The running loop's `Preloader.model_listed` (an awaitable)."""
    return loop_state.current().preloads.model_listed(profile)


def ollama_client(url: str) -> Any:
    return loop_state.clients().ollama(url)


async def preload(communicator: WebsocketCommunicator) -> None:
    await communicator.send_json_to({"type": "preload"})


def test_preload_frames_parse_and_build():
    assert client_frames.parse('{"type": "preload"}') == {"type": "preload"}
    assert frames.model_state("ready", "m", load_ms=12.5) == {
        "type": "model",
        "state": "ready",
        "model": "m",
        "load_ms": 12.5,
    }
    assert frames.model_state("error", "m", detail="down") == {
        "type": "model",
        "state": "error",
        "model": "m",
        "detail": "down",
    }


async def test_preload_loads_a_cold_model_and_says_so(alice, conversation, simulator):
    simulator.config.load_ms = 300
    communicator = await connect(alice, conversation)
    await preload(communicator)
    loading = await communicator.receive_json_from(timeout=5)
    ready = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()

    assert loading == frames.model_state("loading", "qwen3-demo:8b")
    assert ready["type"] == "model" and ready["state"] == "ready"
    assert ready["load_ms"] > 0
    (load,) = simulator.loads
    # The same options as a chat, so the answer does not load the model again.
    assert load.body["model"] == "qwen3-demo:8b"
    assert load.body["options"] == conversation.model_profile.request_options()


async def test_preload_of_a_loaded_model_only_says_ready(
    alice, conversation, simulator
):
    communicator = await connect(alice, conversation)
    await send(communicator)
    await frames_until(communicator, "done")
    await preload(communicator)
    frames_seen = await frames_until(communicator, "model")
    await communicator.disconnect()
    assert [f["state"] for f in frames_seen if f["type"] == "model"] == ["ready"]


async def test_preload_is_asked_of_the_server_once_a_minute(
    alice, conversation, simulator
):
    communicator = await connect(alice, conversation)
    for _ in range(3):
        await preload(communicator)
    states: list[str] = []
    while "ready" not in states:
        frame = await communicator.receive_json_from(timeout=10)
        if frame["type"] == "model":
            states.append(frame["state"])
    # The others joined that load (a "loading" each, if they came while it
    # ran) or found it done: the server was asked once.
    assert set(states[:-1]) == {"loading"}
    await communicator.disconnect()
    assert len(simulator.loads) == 1


async def test_preload_while_a_load_runs_joins_it(alice, bob, simulator, demo_profile):
    from chat.models import Conversation

    simulator.config.load_ms = 500
    first = await Conversation.objects.acreate(owner=alice, model_profile=demo_profile)
    second = await Conversation.objects.acreate(owner=bob, model_profile=demo_profile)
    alice_socket = await connect(alice, first)
    bob_socket = await connect(bob, second)
    await preload(alice_socket)
    assert (await alice_socket.receive_json_from(timeout=5))["state"] == "loading"
    await preload(bob_socket)
    assert (await bob_socket.receive_json_from(timeout=5))["state"] == "loading"
    assert (await bob_socket.receive_json_from(timeout=5))["state"] == "ready"
    assert (await alice_socket.receive_json_from(timeout=5))["state"] == "ready"
    await alice_socket.disconnect()
    await bob_socket.disconnect()
    assert len(simulator.loads) == 1


async def test_preload_with_the_model_server_down_says_why_and_retries(
    alice, conversation
):
    profile = conversation.model_profile
    profile.base_url = "http://127.0.0.1:9"
    await profile.asave()
    communicator = await connect(alice, conversation)
    await preload(communicator)
    said = await frames_until(communicator, "model")
    error = said[-1]
    assert error["state"] == "error" and error["model"] == "qwen3-demo:8b"
    assert error["detail"].startswith("The model could not be loaded:")
    assert "127.0.0.1:9" in error["detail"] and "connection refused" in error["detail"]
    # A failed preload is not remembered: the next one asks again.
    await preload(communicator)
    assert (await frames_until(communicator, "model"))[-1]["state"] == "error"
    await communicator.disconnect()
    assert not await Message.objects.filter(conversation=conversation).aexists()


async def test_preload_of_an_openai_compatible_model_asks_nothing(alice, conversation):
    profile = conversation.model_profile
    profile.backend = ModelProfile.Backend.OPENAI
    profile.base_url = "http://127.0.0.1:9"  # never asked: nothing to fail
    await profile.asave()
    communicator = await connect(alice, conversation)
    await preload(communicator)
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


async def test_preload_without_a_model_set_up_is_ignored(
    alice, db_conversation_without_model
):
    communicator = await connect(alice, db_conversation_without_model)
    await preload(communicator)
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


async def test_an_answer_during_a_preload_says_loading_and_records_the_load(
    alice, conversation, simulator
):
    simulator.config.load_ms = 600
    communicator = await connect(alice, conversation)
    await preload(communicator)
    assert (await communicator.receive_json_from(timeout=5))["state"] == "loading"
    await send(communicator)
    seen = await frames_until(communicator, "done")
    await communicator.disconnect()

    states = [f["state"] for f in seen if f["type"] == "model"]
    assert "error" not in states and states[-1] == "ready"
    answer = await answer_of(conversation)
    assert answer.status == Message.Status.DONE
    assert answer.load_ms is not None
    assert len(simulator.loads) == 1


async def test_preload_of_a_deleted_conversation_is_ignored(alice, conversation):
    communicator = await connect(alice, conversation)
    await conversation.adelete()
    await preload(communicator)
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


async def test_model_listed_reads_ollamas_running_models(simulator, demo_profile):
    assert await model_listed(demo_profile) is False  # cold: nothing loaded yet
    simulator.config.load_ms = 0
    await ollama_client(simulator.url).load(demo_profile.tag)
    assert await model_listed(demo_profile) is True


async def test_answers_starting_together_share_one_ps_request(simulator, demo_profile):
    simulator.config.load_ms = 0
    await ollama_client(simulator.url).load(demo_profile.tag)
    listed = await asyncio.gather(*(model_listed(demo_profile) for _ in range(20)))
    assert listed == [True] * 20
    assert simulator.ps_requests == 1
    # Seen loaded a moment ago: taken as loaded without asking again.
    assert await model_listed(demo_profile) is True
    assert simulator.ps_requests == 1


async def test_not_loaded_is_asked_again_each_time(simulator, demo_profile):
    assert await model_listed(demo_profile) is False
    assert await model_listed(demo_profile) is False
    assert simulator.ps_requests == 2
    simulator.config.load_ms = 0
    await ollama_client(simulator.url).load(demo_profile.tag)
    assert await model_listed(demo_profile) is True  # the load's end is seen at once


async def test_model_listed_is_unknown_when_ps_cannot_tell(demo_profile):
    demo_profile.base_url = "http://127.0.0.1:9"
    assert await model_listed(demo_profile) is None
    demo_profile.backend = ModelProfile.Backend.OPENAI
    assert await model_listed(demo_profile) is None
