"""Conversations on each backend, end to end: socket, runner, the backend's
client and the simulator. Mostly an OpenAI-compatible profile (`OpenAIClient`
and `/v1/chat/completions`); what an Ollama profile adds is at the end."""

from __future__ import annotations

import pytest

from chat.live.engine.turn import early
from chat.models import Message, ModelProfile
from tests.support.communicators import (
    answer_of,
    assert_failed_with,
    connect,
    frames_until,
    send,
    text_of,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def no_retry_pauses(settings):
    settings.UPSTREAM_BUSY_RETRY_DELAYS = (0.0, 0.0, 0.0)


@pytest.fixture(autouse=True)
def asked_wait_unbounded(monkeypatch):
    """The database thread waits for the model server's request an hour
    (`chat.live.engine.turn.early`): on every path here, answered or failed, the loop
    says
    when the request was written or failed, or the turn is never committed and
    the test runs out of time."""
    monkeypatch.setattr(early, "ASKED_WAIT", 3600.0)


@pytest.fixture
def openai_profile(simulator, db):
    return ModelProfile.objects.create(
        tag="qwen3-demo:8b",
        backend=ModelProfile.Backend.OPENAI,
        base_url=simulator.url + "/v1",
        supports_thinking=True,
        context_length=8192,
    )


@pytest.fixture
def conversation(conversation, openai_profile):
    conversation.model_profile = openai_profile
    conversation.save()
    return conversation


async def converse(alice, conversation, content: str = "Hello there"):
    communicator = await connect(alice, conversation)
    await send(communicator, content)
    frames = await frames_until(communicator, "done")
    final = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    return frames, final


@pytest.mark.parametrize(
    ("reasoning", "think_tags"),
    [
        ("reasoning_content", "parse"),
        ("reasoning", "parse"),
        ("tags", "parse"),
        ("close_tag", "close_only"),
    ],
)
async def test_thinking_on_lands_apart_from_the_answer(
    alice, conversation, openai_profile, simulator, reasoning, think_tags
):
    simulator.config.reasoning = reasoning
    simulator.config.timings = True
    openai_profile.think_tags = think_tags
    await openai_profile.asave()
    frames, final = await converse(alice, conversation)

    request = simulator.log[-1]
    assert request.protocol == "openai"
    assert request.body["chat_template_kwargs"] == {"enable_thinking": True}
    assert request.body["stream_options"] == {"include_usage": True}
    kinds = [f["type"] for f in frames]
    assert kinds.index("thinking") < kinds.index("content")
    assert frames[-1]["status"] == "done"

    answer = await answer_of(conversation)
    assert answer.status == Message.Status.DONE
    assert answer.thinking == text_of(frames, "thinking") and answer.thinking
    assert answer.content == text_of(frames, "content") and answer.content
    assert "think>" not in answer.content + answer.thinking
    config = simulator.config
    assert answer.output_tokens == config.think_tokens + config.answer_tokens
    assert answer.eval_ms is not None and answer.prompt_tokens
    assert final["message"]["content"] == answer.content


async def test_thinking_off_asks_the_model_not_to_think(alice, conversation, simulator):
    conversation.thinking = "off"
    await conversation.asave()
    frames, _ = await converse(alice, conversation)

    assert simulator.log[-1].body["chat_template_kwargs"] == {"enable_thinking": False}
    assert not text_of(frames, "thinking")
    answer = await answer_of(conversation)
    assert answer.content == text_of(frames, "content") and answer.content
    assert answer.thinking == "" and answer.thinking_enabled is False


@pytest.mark.parametrize(("mode", "switch"), [("off", "/no_think"), ("on", "/think")])
async def test_soft_switch_profile(
    alice, conversation, openai_profile, simulator, mode, switch
):
    openai_profile.thinking_switch = "soft"
    await openai_profile.asave()
    conversation.thinking = mode
    await conversation.asave()
    frames, _ = await converse(alice, conversation, "Why?")

    body = simulator.log[-1].body
    assert "chat_template_kwargs" not in body
    assert body["messages"][-1] == {"role": "user", "content": f"Why? {switch}"}
    assert bool(text_of(frames, "thinking")) is (mode == "on")
    question = await conversation.messages.filter(role="user").alast()
    assert question.content == "Why?"


@pytest.mark.parametrize(
    ("mode", "sampling"), [("on", (0.6, 0.95, 20)), ("off", (0.7, 0.8, 20))]
)
async def test_qwen3_sampling_of_the_mode_is_sent(
    alice, conversation, simulator, mode, sampling
):
    conversation.thinking = mode
    await conversation.asave()
    await converse(alice, conversation)
    body = simulator.log[-1].body
    assert (body["temperature"], body["top_p"], body["top_k"]) == sampling
    assert "num_ctx" not in body and "options" not in body


async def test_malformed_event_is_skipped_and_the_answer_completes(
    alice, conversation, simulator
):
    simulator.config.malformed_after = 3
    frames, _ = await converse(alice, conversation)
    assert frames[-1]["status"] == "done"
    answer = await answer_of(conversation)
    assert answer.status == Message.Status.DONE and answer.content


FAILURES = {
    "model_not_found": ({"tag": "missing:1b"}, {}),
    "upstream_unreachable": ({"base_url": "http://127.0.0.1:9/v1"}, {}),
    "upstream_busy": ({}, {"status": 503}),
    "upstream_error": ({}, {"status": 500}),
    "thinking_unsupported": ({"tag": "llama-demo:3b"}, {}),
    "upstream_timeout": ({}, {"ttft_ms": 3000.0}),
}


@pytest.mark.parametrize(
    ("code", "profile_fields", "faults"), [(c, *v) for c, v in FAILURES.items()]
)
async def test_failures_before_the_answer_keep_the_question(
    alice,
    conversation,
    openai_profile,
    simulator,
    settings,
    code,
    profile_fields,
    faults,
):
    settings.UPSTREAM_FIRST_TOKEN_TIMEOUT = 1
    for name, value in profile_fields.items():
        setattr(openai_profile, name, value)
    await openai_profile.asave()
    for name, value in faults.items():
        setattr(simulator.config, name, value)
    frames, final = await converse(alice, conversation, "still here?")

    await assert_failed_with(conversation, frames, final, code, "still here?")


@pytest.mark.parametrize(
    ("fault", "code"), [("cut_after", "stream_cut"), ("error_after", "upstream_error")]
)
async def test_failure_mid_answer_keeps_the_partial_text(
    alice, conversation, simulator, fault, code
):
    setattr(simulator.config, fault, 12)  # 8 thinking tokens, then 4 of the answer
    frames, _ = await converse(alice, conversation)

    assert next(f for f in frames if f["type"] == "error")["code"] == code
    answer = await answer_of(conversation)
    assert answer.status == Message.Status.ERROR
    assert answer.thinking == text_of(frames, "thinking") and answer.thinking
    assert answer.content == text_of(frames, "content") and answer.content


@pytest.mark.parametrize(
    ("keep_alive", "sent"), [("30m", "30m"), ("-1", -1), ("", None)]
)
async def test_ollama_profile_sends_keep_alive_num_ctx_and_sampling(
    alice, conversation, demo_profile, simulator, keep_alive, sent
):
    demo_profile.keep_alive = keep_alive
    demo_profile.options = {"seed": 7, "num_predict": 20}
    await demo_profile.asave()
    conversation.model_profile = demo_profile
    conversation.thinking = "off"
    await conversation.asave()
    frames, _ = await converse(alice, conversation)

    body = simulator.log[-1].body
    assert body.get("keep_alive") == sent
    assert body["think"] is False
    qwen3_off = {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.0}
    options = {**qwen3_off, "seed": 7, "num_predict": 20, "num_ctx": 8192}
    assert body["options"] == options
    assert frames[-1]["status"] == "done"
    answer = await answer_of(conversation)
    assert answer.done_reason == "length" and answer.output_tokens == 20
