"""The official `openai` client against the live server's `/v1`: answers streamed
and not (reasoning apart from the answer, the same text as stored, with its
figures), thinking switched on and off."""

from __future__ import annotations

import pytest

from chat.models import Message
from tests.api.conftest import (
    ASK,
    MODEL,
    QUESTION,
    issue,
    make_profile,
    openai_client,
    stored_answer,
)
from tests.api.openai_client.asking import ask, expected_script, reasoning, texts

pytestmark = pytest.mark.django_db(transaction=True)


# ---- answers -------------------------------------------------------------------


def test_a_streamed_thinking_answer_comes_apart_and_is_stored(oa, alice_key, simulator):
    chunks = list(ask(oa, stream=True))

    thinking, content = texts(chunks)
    assert (thinking, content) == expected_script(simulator)
    assert thinking and content
    answer = stored_answer(Message.Status.DONE)
    assert (answer.thinking, answer.content) == (thinking, content)
    assert answer.source == Message.Source.API
    assert answer.api_key_id == alice_key.api_key.pk
    assert answer.model_tag == MODEL and answer.thinking_enabled is True
    entry = simulator.log[-1]
    assert answer.output_tokens == entry.tokens_sent
    assert answer.first_token_ms is not None and answer.first_token_ms >= 0
    assert answer.total_ms is not None and answer.total_ms >= answer.first_token_ms
    assert answer.prompt_tokens and answer.eval_ms is not None
    assert answer.done_reason == "stop"
    # One chat.completion.chunk stream, named after the stored answer.
    assert {chunk.id for chunk in chunks} == {f"chatcmpl-{answer.pk}"}
    assert {chunk.model for chunk in chunks} == {MODEL}
    assert {chunk.object for chunk in chunks} == {"chat.completion.chunk"}
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks] == [None] * (
        len(chunks) - 1
    ) + ["stop"]
    # The question is stored beside it, marked as asked with the key.
    question = answer.conversation.messages.get(role=Message.Role.USER)
    assert question.content == QUESTION
    assert (question.source, question.api_key_id) == ("api", alice_key.api_key.pk)
    assert entry.body["messages"] == ASK and entry.body["think"] is True


def test_a_non_streamed_answer_with_its_usage(oa, simulator):
    completion = ask(oa, stream=False)

    answer = stored_answer(Message.Status.DONE)
    message = completion.choices[0].message
    assert (reasoning(message), message.content) == expected_script(simulator)
    assert (reasoning(message), message.content) == (answer.thinking, answer.content)
    assert message.role == "assistant"
    assert completion.id == f"chatcmpl-{answer.pk}"
    assert (completion.object, completion.model) == ("chat.completion", MODEL)
    assert completion.choices[0].finish_reason == "stop"
    usage = completion.usage
    assert (
        usage.completion_tokens == answer.output_tokens == simulator.log[-1].tokens_sent
    )
    assert usage.prompt_tokens == answer.prompt_tokens
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_include_usage_adds_a_last_chunk_with_the_usage(oa, simulator):
    chunks = list(ask(oa, stream=True, stream_options={"include_usage": True}))

    answer = stored_answer(Message.Status.DONE)
    *rest, last = chunks
    assert last.choices == []
    assert last.usage.completion_tokens == answer.output_tokens
    assert last.usage.prompt_tokens == answer.prompt_tokens
    assert last.usage.total_tokens == answer.prompt_tokens + answer.output_tokens
    assert all(chunk.usage is None for chunk in rest)
    assert rest[-1].choices[0].finish_reason == "stop"


def test_without_include_usage_no_chunk_has_usage(oa, simulator):
    chunks = list(ask(oa, stream=True))
    assert chunks and all(chunk.usage is None and chunk.choices for chunk in chunks)
    stored_answer(Message.Status.DONE)


def test_the_stream_says_it_is_not_to_be_buffered(oa, simulator):
    raw = oa.chat.completions.with_raw_response.create(
        model=MODEL, messages=ASK, stream=True
    )
    assert raw.status_code == 200
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert raw.headers["x-accel-buffering"] == "no"
    assert raw.headers["cache-control"] == "no-store"
    assert texts(list(raw.parse()))[1] == stored_answer().content


def test_a_non_streamed_answer_is_json_and_not_cached(oa, simulator):
    raw = oa.chat.completions.with_raw_response.create(model=MODEL, messages=ASK)
    assert raw.headers["content-type"] == "application/json"
    assert raw.headers["cache-control"] == "no-store"
    assert raw.parse().choices[0].message.content == stored_answer().content


# ---- thinking on and off -------------------------------------------------------


@pytest.mark.parametrize(
    "switch",
    [
        {"reasoning_effort": "none"},
        {"reasoning_effort": "minimal"},
        {"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}},
        {"extra_body": {"think": False}},
    ],
    ids=["effort-none", "effort-minimal", "template-kwargs", "think-false"],
)
def test_thinking_off(oa, simulator, switch):
    chunks = list(ask(oa, stream=True, **switch))

    thinking, content = texts(chunks)
    assert (thinking, content) == expected_script(simulator, think=False)
    entry = simulator.log[-1]
    assert entry.body["think"] is False and entry.thinking is False
    answer = stored_answer(Message.Status.DONE)
    assert (answer.thinking, answer.content) == ("", content)
    assert answer.thinking_enabled is False
    assert answer.conversation.thinking == "off"


def test_thinking_on_where_the_model_would_not(oa, demo_profile, simulator):
    demo_profile.default_thinking = "off"
    demo_profile.save()

    plain = ask(oa)
    assert simulator.log[-1].body["think"] is False
    assert reasoning(plain.choices[0].message) == ""

    asked = ask(oa, reasoning_effort="high")
    assert simulator.log[-1].body["think"] is True
    assert reasoning(asked.choices[0].message) == expected_script(simulator)[0]


def test_a_model_that_cannot_think_is_not_asked_to(live_server_url, alice, simulator):
    make_profile("llama-demo:3b", simulator.url, supports_thinking=False)
    with openai_client(live_server_url, issue(alice).key) as client:
        completion = ask(client, model="llama-demo:3b", reasoning_effort="high")
    assert "think" not in simulator.log[-1].body
    assert completion.choices[0].message.content
    assert stored_answer(Message.Status.DONE).thinking_enabled is None
