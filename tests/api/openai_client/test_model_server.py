"""The official `openai` client against the live server's `/v1`: what reaches
the model server (options, limits, the whole conversation), a busy one asked
again, the key's last use; a model server down, slow or failing mid-answer, as
the client's own exception class."""

from __future__ import annotations

import openai
import pytest

from chat.models import Message, quotas
from tests.api.conftest import (
    closed_port,
    issue,
    make_profile,
    openai_client,
    stored_answer,
)
from tests.api.openai_client.asking import ask, texts
from tests.support.waiting import until_sync

pytestmark = pytest.mark.django_db(transaction=True)


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
