"""`chat.api.requests`: OpenAI's chat body read into one `ChatRequest`: the model,
one choice, the messages (roles, text parts, no images, audio or files,
the message limit, a question last) and the stream flag; what is ignored, and
each refusal a 400 that says what is wrong. No server, no database: marked
`smoke`, so they run on the zero-config defaults too."""

from __future__ import annotations

import pytest
from django.test import override_settings

from chat.api.requests import openai_chat
from tests.api.requests.reading import MODEL, QUESTION, openai, refused

pytestmark = pytest.mark.smoke


def test_openai_plain_question():
    request = openai()
    assert request.model == MODEL
    assert request.messages == QUESTION
    assert request.stream is False
    assert request.think is None
    assert request.options == {}
    assert request.include_usage is False


def test_openai_unknown_fields_are_ignored():
    request = openai(
        user="script-7",
        logit_bias={"50256": -100},
        metadata={"a": "b"},
        parallel_tool_calls=False,
        store=True,
        service_tier="auto",
        response_format=None,
        something_new={"nested": [1, 2, 3]},
    )
    assert request.messages == QUESTION
    assert request.options == {}


def test_openai_model_name_is_trimmed():
    assert openai_chat({"model": f"  {MODEL} ", "messages": QUESTION}).model == MODEL


@pytest.mark.parametrize("model", [None, "", "   ", 7, ["m"], {"name": "m"}])
def test_openai_model_is_required(model):
    error = refused(openai_chat, {"model": model, "messages": QUESTION})
    assert error.message == "Name the model: model is required."
    assert error.param == "model"


def test_openai_model_missing():
    error = refused(openai_chat, {"messages": QUESTION})
    assert error.param == "model"


def test_openai_model_name_too_long():
    error = refused(openai_chat, {"model": "m" * 201, "messages": QUESTION})
    assert error.message == "model is too long."


def test_openai_model_name_with_a_nul_character():
    """No model is named so, and the database cannot even look such a name up:
    a 400, not a failure of the site."""
    error = refused(openai_chat, {"model": "qwen3\x00", "messages": QUESTION})
    assert error.param == "model"
    assert "NUL" in error.message


@pytest.mark.parametrize("n", [2, 0, -1, 10, "2"])
def test_openai_more_than_one_choice_is_refused(n):
    error = refused(openai, n=n)
    assert error.message == "Only n=1 is supported: ask once per answer."
    assert error.param == "n"


@pytest.mark.parametrize("n", [1, None])
def test_openai_one_choice_is_fine(n):
    assert openai(n=n).messages == QUESTION


@pytest.mark.parametrize("tools", [None, []])
def test_openai_no_tools_is_fine(tools):
    request = openai(tools=tools, tool_choice="none")
    assert request.messages == QUESTION
    assert request.tools is None


@pytest.mark.parametrize("messages", [None, [], "hello", {"role": "user"}, 3])
def test_openai_messages_must_be_a_non_empty_list(messages):
    error = refused(openai_chat, {"model": MODEL, "messages": messages})
    assert error.message == "messages must be a non-empty list."
    assert error.param == "messages"


def test_openai_messages_missing():
    assert refused(openai_chat, {"model": MODEL}).param == "messages"


def test_openai_a_message_must_be_an_object():
    error = refused(openai, messages=[*QUESTION, "hi"])
    assert error.message == "messages[1] must be an object."


def test_openai_developer_is_the_system_prompt():
    request = openai(
        messages=[
            {"role": "developer", "content": "Answer in French."},
            {"role": "user", "content": "Hello"},
        ]
    )
    assert request.messages == [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hello"},
    ]


def test_openai_a_whole_conversation_keeps_its_order():
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "One"},
        {"role": "assistant", "content": "Two"},
        {"role": "user", "content": "Three"},
    ]
    assert openai(messages=messages).messages == messages


@pytest.mark.parametrize("role", ["bot", "", None, "System", "function"])
def test_openai_unknown_roles_are_refused(role):
    error = refused(openai, messages=[{"role": role, "content": "x"}, *QUESTION])
    assert error.message == (
        "messages[0].role must be system, user, assistant or tool."
    )


def test_openai_text_parts_are_joined():
    parts = [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]
    request = openai(messages=[{"role": "user", "content": parts}])
    assert request.messages == [{"role": "user", "content": "first\nsecond"}]


def test_openai_an_assistant_message_without_content_is_empty():
    messages = [*QUESTION, {"role": "assistant", "content": None}, *QUESTION]
    assert openai(messages=messages).messages[1] == {"role": "assistant", "content": ""}


@pytest.mark.parametrize("kind", ["image_url", "input_image", "image"])
def test_openai_images_are_refused(kind):
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": kind, kind: {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]
    error = refused(openai, messages=[{"role": "user", "content": parts}])
    assert error.message == "Images are not supported."
    assert error.param == "messages"


@pytest.mark.parametrize("kind", ["input_audio", "audio", "file"])
def test_openai_audio_and_files_are_refused_by_name(kind):
    parts = [{"type": kind, kind: {"data": "AAAA"}}]
    error = refused(openai, messages=[{"role": "user", "content": parts}])
    assert error.message == f"Content of type {kind} is not supported."


@pytest.mark.parametrize(
    "part",
    [
        {"type": "text"},
        {"type": "text", "text": 3},
        {"type": "refusal", "refusal": "no"},
        {"text": "no type"},
        "just a string",
        None,
    ],
)
def test_openai_parts_that_are_not_text_are_refused(part):
    error = refused(openai, messages=[{"role": "user", "content": [part]}])
    assert error.message == "messages[0].content has a part that is not text."


@pytest.mark.parametrize("content", [3, {"text": "hi"}, True])
def test_openai_content_must_be_text_or_parts(content):
    error = refused(openai, messages=[{"role": "user", "content": content}])
    assert error.message == "messages[0].content must be a string or a list of parts."


@override_settings(MESSAGE_MAX_CHARS=20)
def test_openai_a_message_over_the_limit_is_refused():
    error = refused(openai, messages=[{"role": "user", "content": "x" * 21}])
    assert error.message == "messages[0] is 21 characters; the limit is 20."
    assert openai(messages=[{"role": "user", "content": "x" * 20}]).messages


@override_settings(MESSAGE_MAX_CHARS=20)
def test_openai_joined_parts_count_against_the_limit():
    parts = [{"type": "text", "text": "x" * 10}, {"type": "text", "text": "y" * 10}]
    error = refused(openai, messages=[{"role": "user", "content": parts}])
    assert error.message == "messages[0] is 21 characters; the limit is 20."


def test_openai_a_nul_character_is_refused():
    error = refused(openai, messages=[{"role": "user", "content": "a\x00b"}])
    assert error.message == "messages[0] contains a NUL character."


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "system", "content": "Be brief."}],
        [*QUESTION, {"role": "assistant", "content": "Rayleigh."}],
        [{"role": "user", "content": "   \n"}],
        [{"role": "user", "content": None}],
        [{"role": "user", "content": []}],
    ],
)
def test_openai_the_last_message_is_a_question(messages):
    error = refused(openai, messages=messages)
    assert error.message == (
        "The last message must be the user's question, and not blank, or a "
        "tool's result."
    )


@pytest.mark.parametrize("stream", [True, False])
def test_openai_stream_flag(stream):
    assert openai(stream=stream).stream is stream


def test_openai_stream_null_is_the_default():
    assert openai(stream=None).stream is False


@pytest.mark.parametrize("stream", ["true", 1, 0, "yes"])
def test_openai_stream_must_be_a_boolean(stream):
    error = refused(openai, stream=stream)
    assert error.message == "stream must be true or false."
    assert error.param == "stream"
