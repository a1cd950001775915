"""The official `openai` client against the live server's `/v1`: the models a
key may ask, answers streamed and not (reasoning apart from the answer, the
same text as stored, with its figures), what reaches the model server, and
every refusal as the client's own exception class."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import openai
import pytest
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from chat.api.auth import RATE_WINDOW_SECONDS
from chat.api.requests import max_body_bytes
from chat.models import Conversation, Message, SiteDefaults, quotas
from chat.ops.throughput import Window, summary
from chat.simulator.script import reply_script
from tests.api.conftest import (
    ASK,
    MODEL,
    QUESTION,
    closed_port,
    issue,
    make_profile,
    openai_client,
    stored_answer,
    team_of,
)
from tests.support.waiting import until_sync

pytestmark = pytest.mark.django_db(transaction=True)


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


# ---- the models --------------------------------------------------------------


def test_models_lists_only_what_the_key_may_ask(oa, alice, bob, simulator):
    make_profile("llama-demo:3b", simulator.url, teams=[team_of("GPU", alice)])
    make_profile("ops-only:1b", simulator.url, teams=[team_of("Ops", bob)])
    make_profile("switched-off:1b", simulator.url, enabled=False)

    models = oa.models.list()

    assert [m.id for m in models.data] == [MODEL, "llama-demo:3b"]
    first = models.data[0]
    assert (first.object, first.owned_by) == ("model", "chatsite")
    assert first.model_extra["context_length"] == 8192
    assert first.model_extra["max_model_len"] == 8192


def test_a_team_model_is_hidden_from_outsiders(
    live_server_url, alice, bob, demo_profile, simulator
):
    make_profile("gpu-only:1b", simulator.url, teams=[team_of("GPU", alice)])
    with openai_client(live_server_url, issue(bob).key) as client:
        assert [m.id for m in client.models.list().data] == [MODEL]


def test_a_key_restricted_to_one_model_lists_that_one(
    live_server_url, alice, demo_profile, simulator
):
    other = make_profile("llama-demo:3b", simulator.url)
    with openai_client(live_server_url, issue(alice, profiles=[other]).key) as client:
        assert [m.id for m in client.models.list().data] == ["llama-demo:3b"]


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


# ---- what reaches the model server ---------------------------------------------


def test_sampling_options_and_limits_reach_the_model_server(oa, simulator):
    completion = ask(
        oa,
        reasoning_effort="none",
        max_tokens=5,
        temperature=0.2,
        top_p=0.5,
        stop=["\n\n", "END"],
        seed=7,
        presence_penalty=0.25,
        frequency_penalty=-0.5,
        extra_body={"top_k": 3, "min_p": 0.1, "num_ctx": 999_999},
    )

    options = simulator.log[-1].body["options"]
    assert options["num_predict"] == 5
    assert options["temperature"] == 0.2
    assert options["top_p"] == 0.5
    assert options["stop"] == ["\n\n", "END"]
    assert options["seed"] == 7
    assert options["presence_penalty"] == 0.25
    assert options["frequency_penalty"] == -0.5
    assert (options["top_k"], options["min_p"]) == (3, 0.1)
    # The context is the admin's, whatever the client says.
    assert options["num_ctx"] == 8192
    # The model stopped at the limit, and the client hears why.
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage.completion_tokens == 5
    answer = stored_answer(Message.Status.DONE)
    assert (answer.done_reason, answer.output_tokens) == ("length", 5)


def test_the_whole_conversation_reaches_the_model_server(oa, simulator):
    messages = [
        {"role": "developer", "content": "Answer briefly."},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi! How can I help?"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Why is"},
                {"type": "text", "text": "the sky blue?"},
            ],
        },
    ]
    ask(oa, messages=messages)
    assert simulator.log[-1].body["messages"] == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi! How can I help?"},
        {"role": "user", "content": "Why is\nthe sky blue?"},
    ]
    answer = stored_answer(Message.Status.DONE)
    assert answer.history_sent == 4


def test_a_busy_model_server_is_asked_again(oa, simulator):
    """The retry rules: a 503 before the first token is asked again."""
    simulator.config.status = 503
    simulator.config.fault_requests = 1

    completion = ask(oa)

    assert [entry.status for entry in simulator.log] == [503, 200]
    assert completion.choices[0].message.content == stored_answer("done").content


def test_the_key_notes_its_last_use(oa, alice_key, simulator):
    assert alice_key.api_key.last_used_at is None
    oa.models.list()
    alice_key.api_key.refresh_from_db()
    assert alice_key.api_key.last_used_at is not None
    assert alice_key.api_key.last_used_from == "127.0.0.1"


# ---- refusals: the key -----------------------------------------------------------


def wrong_key(user: Any) -> str:
    return "csk-" + "A" * 43


def revoked_key(user: Any) -> str:
    issued = issue(user)
    issued.api_key.revoke(actor=user)
    return issued.key


def expired_key(user: Any) -> str:
    return issue(user, expires_at=timezone.now() - timedelta(minutes=1)).key


def switched_off_owner(user: Any) -> str:
    key = issue(user).key
    user.is_active = False
    user.save()
    return key


@pytest.mark.parametrize(
    ("make_key", "message"),
    [
        (wrong_key, "That API key is not valid."),
        (revoked_key, "That API key was revoked."),
        (expired_key, "That API key expired on "),
        (switched_off_owner, "The account of that API key is switched off."),
    ],
    ids=["wrong", "revoked", "expired", "switched-off-owner"],
)
def test_a_key_that_cannot_be_used_is_401(
    live_server_url, alice, demo_profile, simulator, make_key: Callable, message
):
    with openai_client(live_server_url, make_key(alice)) as client:
        for call in (client.models.list, lambda: ask(client, stream=True)):
            with pytest.raises(openai.AuthenticationError) as caught:
                call()
            error = caught.value
            assert error.status_code == 401
            assert (error.code, error.type) == (
                "invalid_api_key",
                "authentication_error",
            )
            assert error.body["message"].startswith(message)
            assert error.response.headers["www-authenticate"] == (
                'Bearer realm="chatsite"'
            )
    assert not simulator.log
    assert not Message.objects.exists()


def test_a_key_revoked_while_in_use_is_refused_at_once(oa, alice, alice_key, simulator):
    assert ask(oa).choices[0].message.content
    stored_answer(Message.Status.DONE)

    assert alice_key.api_key.revoke(actor=alice)

    with pytest.raises(openai.AuthenticationError, match="revoked"):
        ask(oa)
    assert len(simulator.log) == 1


def test_the_api_switched_off_is_403(oa, simulator):
    site = SiteDefaults.load()
    site.api_enabled = False
    site.save()
    with pytest.raises(openai.PermissionDeniedError) as caught:
        oa.models.list()
    assert caught.value.status_code == 403
    assert caught.value.code == "api_forbidden"
    assert caught.value.type == "permission_error"


def test_the_api_open_to_other_teams_only_is_403(oa, alice, bob, simulator):
    site = SiteDefaults.load()
    site.api_teams.set([team_of("Ops", bob)])
    with pytest.raises(openai.PermissionDeniedError, match="not open to you"):
        ask(oa)

    site.api_teams.add(team_of("GPU", alice))
    assert [m.id for m in oa.models.list().data] == [MODEL]


# ---- refusals: the model ---------------------------------------------------------


def test_a_model_of_another_team_is_403(oa, bob, simulator):
    make_profile("ops-only:1b", simulator.url, teams=[team_of("Ops", bob)])
    with pytest.raises(openai.PermissionDeniedError) as caught:
        ask(oa, model="ops-only:1b")
    assert (caught.value.code, caught.value.param) == ("model_forbidden", "model")
    assert not simulator.log and not Message.objects.exists()


def test_a_model_outside_the_keys_own_is_403(live_server_url, alice, simulator):
    other = make_profile("llama-demo:3b", simulator.url)
    make_profile(MODEL, simulator.url)
    with (
        openai_client(live_server_url, issue(alice, profiles=[other]).key) as client,
        pytest.raises(openai.PermissionDeniedError) as caught,
    ):
        ask(client)
    assert caught.value.code == "model_forbidden"
    assert not simulator.log


@pytest.mark.parametrize("model", ["no-such-model:7b", "qwen3-demo", "switched-off:1b"])
def test_an_unknown_model_is_404(oa, simulator, model):
    make_profile("switched-off:1b", simulator.url, enabled=False)
    with pytest.raises(openai.NotFoundError) as caught:
        ask(oa, model=model)
    error = caught.value
    assert error.status_code == 404
    assert (error.code, error.param, error.type) == (
        "model_not_found",
        "model",
        "not_found_error",
    )
    assert error.body["message"] == f"The model {model} does not exist."
    assert not simulator.log


# ---- refusals: quotas and the request rate -----------------------------------


def test_history_stored_with_the_answer_counts_as_one_answer(oa, alice, simulator):
    """The assistant turns a request sends are the asker's text: stored to
    show the conversation, never counted as answers given here."""
    messages = [
        {"role": "user", "content": "One"},
        {"role": "assistant", "content": "First"},
        {"role": "user", "content": "Two"},
        {"role": "assistant", "content": "Second"},
        {"role": "user", "content": "Three"},
    ]
    ask(oa, messages=messages, extra_headers={"X-Chatsite-Store": "yes"})
    answer = stored_answer(Message.Status.DONE)
    stored = list(answer.conversation.messages.values_list("role", "content"))
    assert stored[:-1] == [(m["role"], m["content"]) for m in messages]
    assert stored[-1] == ("assistant", answer.content)
    assert quotas.usage(alice, "day")[0] == 1
    now = timezone.now()
    window = Window(now - timedelta(hours=1), now + timedelta(hours=1))
    [row] = summary(window)
    assert row["answers"] == 1


def seconds_to_midnight() -> float:
    now = datetime.now(UTC)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time())
    return (midnight.replace(tzinfo=UTC) - now).total_seconds()


def test_a_reached_quota_is_429_with_retry_after(oa, alice, simulator):
    site = SiteDefaults.load()
    site.user_answers = 1
    site.save()
    ask(oa)
    stored_answer(Message.Status.DONE)

    with pytest.raises(openai.RateLimitError) as caught:
        ask(oa, stream=True)

    error = caught.value
    assert (error.status_code, error.code, error.type) == (
        429,
        "quota_reached",
        "rate_limit_error",
    )
    assert "Your quota is reached (1 of 1 answers)" in error.body["message"]
    retry = int(error.response.headers["retry-after"])
    assert abs(retry - seconds_to_midnight()) <= 5
    # Refused before anything was stored or asked.
    assert Message.objects.filter(role=Message.Role.ASSISTANT).count() == 1
    assert len(simulator.log) == 1
    assert quotas.usage(alice, "day")[0] == 1


def test_a_key_over_its_request_rate_is_429_with_retry_after(
    live_server_url, alice, demo_profile, simulator
):
    """The count is in the shared cache: set at the limit here (for this
    minute and the next, whichever the request lands in), the server refuses."""
    if "redis" not in settings.CACHES["default"]["BACKEND"].lower():
        pytest.skip("the live server shares the rate count through Redis")
    limit = settings.API_REQUESTS_PER_MINUTE
    busy, calm = issue(alice, "busy"), issue(alice, "calm")
    window = int(datetime.now(UTC).timestamp() // RATE_WINDOW_SECONDS)
    for minute in (window, window + 1):
        cache.set(f"api-rate:{busy.api_key.pk}:{minute}", limit, 180)

    with (
        openai_client(live_server_url, busy.key) as client,
        pytest.raises(openai.RateLimitError) as caught,
    ):
        client.models.list()
    error = caught.value
    assert error.code == "rate_limited"
    assert f"More than {limit} requests a minute" in error.body["message"]
    assert 1 <= int(error.response.headers["retry-after"]) <= RATE_WINDOW_SECONDS + 1
    # Per key: another key of the same owner is not held up.
    with openai_client(live_server_url, calm.key) as client:
        assert [m.id for m in client.models.list().data] == [MODEL]


# ---- refusals: the model server --------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_model_server_that_is_down_is_503(live_server_url, alice, stream):
    make_profile("down:1b", f"http://127.0.0.1:{closed_port()}")
    with (
        openai_client(live_server_url, issue(alice).key) as client,
        pytest.raises(openai.InternalServerError) as caught,
    ):
        ask(client, model="down:1b", stream=stream)
    assert caught.value.status_code == 503
    assert caught.value.code == "upstream_unreachable"
    answer = stored_answer(Message.Status.ERROR)
    assert answer.error_code == "upstream_unreachable"
    # Failed before its first word: it counts against no quota.
    assert quotas.usage(alice, "day") == (0, 0)


def test_no_first_token_in_time_is_504(oa, demo_profile, simulator):
    demo_profile.first_token_timeout = 1
    demo_profile.save()
    simulator.config.ttft_ms = 60_000

    with pytest.raises(openai.InternalServerError) as caught:
        ask(oa)

    assert (caught.value.status_code, caught.value.code) == (504, "upstream_timeout")
    assert "sent no first token within 1 s" in caught.value.body["message"]
    assert stored_answer(Message.Status.ERROR).error_code == "upstream_timeout"
    # The model server's request was given up, not left running.
    entry = until_sync(lambda: simulator.log[-1].ended, "the request never ended")
    assert entry and simulator.log[-1].disconnected


def test_a_fault_after_the_first_token_comes_in_the_stream(oa, simulator):
    simulator.config.error_after = 3
    stream = ask(oa, stream=True)
    received = []
    with pytest.raises(openai.APIError) as caught:
        received.extend(stream)
    assert caught.value.code == "upstream_error"
    assert "model runner has unexpectedly stopped" in caught.value.message
    answer = stored_answer(Message.Status.ERROR)
    assert texts(received)[0] == answer.thinking != ""


def test_a_fault_after_the_first_token_of_a_whole_answer_is_502(oa, simulator):
    simulator.config.error_after = 3
    with pytest.raises(openai.InternalServerError) as caught:
        ask(oa)
    assert (caught.value.status_code, caught.value.code) == (502, "upstream_error")
    assert stored_answer(Message.Status.ERROR).thinking


# ---- refusals: the request ---------------------------------------------------------


def test_more_than_one_choice_is_400(oa, simulator):
    with pytest.raises(openai.BadRequestError) as caught:
        ask(oa, n=2)
    assert (caught.value.code, caught.value.param) == ("invalid_request", "n")
    assert caught.value.type == "invalid_request_error"
    assert "Only n=1 is supported" in caught.value.body["message"]


def test_an_image_is_400_naming_images(oa, simulator):
    parts = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
    ]
    with pytest.raises(openai.BadRequestError, match="Images are not supported"):
        ask(oa, messages=[{"role": "user", "content": parts}])


def test_tools_are_400_naming_tools(oa, simulator):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    with pytest.raises(openai.BadRequestError) as caught:
        ask(oa, tools=tools)
    assert caught.value.param == "tools"
    assert "Tools and function calls are not supported" in caught.value.message


def test_a_nul_in_the_model_name_is_400(oa, simulator):
    with pytest.raises(openai.BadRequestError) as caught:
        ask(oa, model="qwen3\x00")
    assert caught.value.param == "model"


def test_invalid_json_is_400_in_the_error_shape(http, alice_key, simulator):
    response = http.post(
        "/v1/chat/completions",
        headers={**alice_key.headers, "Content-Type": "application/json"},
        content=b'{"model": "qwen3-demo:8b", "messages": [',
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": "The request body is not valid JSON.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_request",
        }
    }


def test_a_body_over_the_limit_is_413(oa, simulator):
    with pytest.raises(openai.APIStatusError) as caught:
        ask(oa, messages=[{"role": "user", "content": "x" * max_body_bytes()}])
    assert caught.value.status_code == 413
    assert caught.value.code == "request_too_large"
    assert not Message.objects.exists()


def test_a_body_within_the_limit_is_read_whole(oa, simulator):
    """Below the API's limit, a body larger than Django's limit for form
    uploads (DATA_UPLOAD_MAX_MEMORY_SIZE) is still the API's to read: unknown
    fields are ignored, the answer comes."""
    size = max(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0, 0) + 100_000
    assert size < max_body_bytes()
    completion = ask(oa, extra_body={"padding": "x" * size})
    assert completion.choices[0].message.content == stored_answer("done").content


def test_a_question_over_the_message_limit_is_400(oa, simulator):
    too_long = "x" * (settings.MESSAGE_MAX_CHARS + 1)
    with pytest.raises(openai.BadRequestError, match="characters; the limit is"):
        ask(oa, messages=[{"role": "user", "content": too_long}])


def test_refused_requests_store_nothing(oa, simulator):
    for bad in ({"n": 3}, {"model": "nope"}, {"messages": []}):
        with pytest.raises(openai.APIStatusError):
            ask(oa, **bad)
    assert not Conversation.objects.exists()
    assert not simulator.log


def test_unknown_fields_are_ignored(oa, simulator):
    completion = ask(
        oa,
        user="script-7",
        metadata={"run": "nightly"},
        logit_bias={"50256": -100},
        extra_body={"something_new": {"nested": [1, 2]}},
    )
    assert completion.choices[0].message.content
    body = simulator.log[-1].body
    assert "user" not in body and "something_new" not in body
    assert stored_answer("done")


def test_the_error_body_is_openais_shape(http, alice_key, simulator):
    response = http.post(
        "/v1/chat/completions",
        headers=alice_key.headers,
        json={"model": "nope:1b", "messages": ASK},
    )
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert json.loads(response.content) == {
        "error": {
            "message": "The model nope:1b does not exist.",
            "type": "not_found_error",
            "param": "model",
            "code": "model_not_found",
        }
    }


def test_a_body_over_the_limit_without_a_length_is_413(http, alice_key, simulator):
    """Sent in chunks, the body has no Content-Length to refuse it by: it is
    refused by what was read."""
    size = max_body_bytes() + 1

    def chunks():
        yield b'{"model": "qwen3-demo:8b", "pad": "'
        for _ in range(size // 65536 + 1):
            yield b"x" * 65536
        yield b'"}'

    response = http.post(
        "/v1/chat/completions", headers=alice_key.headers, content=chunks()
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
