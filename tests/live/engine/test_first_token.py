from __future__ import annotations

import pytest

from chat.live.engine import first_token
from chat.live.engine.generation import Generation
from chat.models import Message, ModelProfile
from chat.upstream import Finished
from tests.support.communicators import answer_of, connect, frames_until, send

pytestmark = pytest.mark.django_db(transaction=True)


async def limit(conversation, seconds: int) -> None:
    profile = conversation.model_profile
    profile.first_token_timeout = seconds
    await profile.asave()


def test_the_limit_defaults_to_the_site_setting(settings, db):
    settings.UPSTREAM_FIRST_TOKEN_TIMEOUT = 42
    profile = ModelProfile.objects.create(tag="m", base_url="http://box:11434")
    assert profile.first_token_timeout == 42


async def test_no_first_token_within_the_limit_is_a_clear_error(
    alice, conversation, simulator
):
    await limit(conversation, 1)
    simulator.config.ttft_ms = 4000
    communicator = await connect(alice, conversation)
    await send(communicator, "anyone there?")
    seen = await frames_until(communicator, "done")
    final = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()

    error = next(f for f in seen if f["type"] == "error")
    assert error["code"] == "upstream_timeout"
    assert error["detail"] == (
        "The model qwen3-demo:8b sent no first token within 1 s. Your question is "
        "kept: try again, or ask an admin to raise the model's first-token limit."
    )
    assert seen[-1]["status"] == "error"
    assert final["message"]["error_code"] == "upstream_timeout"
    assert await conversation.messages.filter(
        role="user", content="anyone there?"
    ).aexists()
    answer = await answer_of(conversation)
    assert answer.status == Message.Status.ERROR and answer.content == ""
    # The request was closed, so the model server stops working on it.
    entry = await simulator.wait_for_end()
    assert entry.disconnected and entry.tokens_sent == 0


async def test_the_limit_holds_for_openai_compatible_servers_too(
    alice, conversation, simulator
):
    profile = conversation.model_profile
    profile.backend = ModelProfile.Backend.OPENAI
    profile.base_url = simulator.url + "/v1"
    await profile.asave()
    await limit(conversation, 1)
    simulator.config.ttft_ms = 4000
    communicator = await connect(alice, conversation)
    await send(communicator, "anyone there?")
    seen = await frames_until(communicator, "done")
    await communicator.disconnect()

    assert "model" not in [f["type"] for f in seen]  # nothing says it loads
    error = next(f for f in seen if f["type"] == "error")
    assert error["code"] == "upstream_timeout"
    assert "sent no first token within 1 s" in error["detail"]
    assert await conversation.messages.filter(role="user").aexists()


async def test_a_loading_model_is_not_an_error_and_its_load_time_is_kept(
    alice, conversation, simulator
):
    # The load alone takes longer than the limit; the answer then comes in time.
    await limit(conversation, 2)
    simulator.config.load_ms = 2500
    simulator.config.ttft_ms = 800
    communicator = await connect(alice, conversation)
    await send(communicator)
    seen = await frames_until(communicator, "done")
    await communicator.disconnect()

    assert "error" not in [f["type"] for f in seen]
    model = [f for f in seen if f["type"] == "model"]
    assert [f["state"] for f in model] == ["loading", "ready"]
    kinds = [f["type"] for f in seen]
    # "loading model" is said while the answer waits, before any of its text.
    assert kinds.index("start") < kinds.index("model") < kinds.index("thinking")
    answer = await answer_of(conversation)
    assert answer.status == Message.Status.DONE and answer.content
    # Ollama's own load_duration: the simulator's whole 2.5 s load.
    assert answer.load_ms is not None and answer.load_ms >= 2500
    assert model[-1]["load_ms"] >= 2500


async def test_a_load_past_the_load_limit_is_a_clear_error(
    alice, conversation, simulator, monkeypatch
):
    monkeypatch.setattr(first_token, "LOAD_LIMIT", 0.5)
    simulator.config.load_ms = 5000
    communicator = await connect(alice, conversation)
    await send(communicator, "wake up")
    seen = await frames_until(communicator, "done")
    await communicator.disconnect()

    assert [f["state"] for f in seen if f["type"] == "model"] == ["loading"]
    error = next(f for f in seen if f["type"] == "error")
    assert error["code"] == "upstream_timeout"
    assert "did not finish loading within 0.5 s" in error["detail"]
    assert "Your question is kept" in error["detail"]
    assert await conversation.messages.filter(role="user", content="wake up").aexists()


def test_the_servers_load_time_wins_over_our_clock():
    generation = Generation(1, Message(pk=1), "m", None)
    generation.loaded(1234.5)
    assert generation.figures()["load_ms"] == 1234.5
    generation.finished = Finished("stop", load_ms=20.0)
    assert generation.figures()["load_ms"] == 20.0
    generation.finished = Finished("stop")
    assert generation.figures()["load_ms"] == 1234.5
