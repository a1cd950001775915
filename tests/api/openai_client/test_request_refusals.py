"""The official `openai` client against the live server's `/v1`: a request the
site cannot take (choices, images, bad JSON, a body or question over the
limit) refused with 400 or 413 in OpenAI's error shape, storing nothing; unknown
fields ignored."""

from __future__ import annotations

import json

import openai
import pytest
from django.conf import settings

from chat.api.requests import max_body_bytes
from chat.models import Conversation, Message
from tests.api.conftest import ASK, stored_answer
from tests.api.openai_client.asking import ask

pytestmark = pytest.mark.django_db(transaction=True)


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
