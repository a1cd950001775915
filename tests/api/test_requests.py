"""`chat.api.requests`: request bodies of both dialects read into one
`ChatRequest`, each refusal a 400 (413 for size) that says what is wrong, and
what clients send that the site ignores. No server, no database: marked
`smoke`, so they run on the zero-config defaults too."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import override_settings

from chat.api.errors import ApiError
from chat.api.requests import (
    MAX_STOP_SEQUENCES,
    decode,
    max_body_bytes,
    ollama_chat,
    openai_chat,
)

pytestmark = pytest.mark.smoke

MODEL = "qwen3-demo:8b"
QUESTION = [{"role": "user", "content": "Why is the sky blue?"}]


def openai(**fields: Any):
    return openai_chat({"model": MODEL, "messages": QUESTION, **fields})


def ollama(**fields: Any):
    return ollama_chat({"model": MODEL, "messages": QUESTION, **fields})


def refused(call: Any, *args: Any, **kwargs: Any) -> ApiError:
    """The ApiError `call` raises, which must be a 400."""
    with pytest.raises(ApiError) as caught:
        call(*args, **kwargs)
    assert caught.value.status == 400, caught.value
    assert caught.value.code == "invalid_request"
    return caught.value


# ---- the body ----------------------------------------------------------------


def test_decode_reads_a_json_object():
    assert decode(b'{"model": "m", "x": [1, 2]}') == {"model": "m", "x": [1, 2]}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "The request body is not valid JSON."),
        (b"{", "The request body is not valid JSON."),
        (b"{'model': 'm'}", "The request body is not valid JSON."),
        (b'{"a": 1} trailing', "The request body is not valid JSON."),
        (b"[1, 2]", "The request body must be a JSON object."),
        (b'"text"', "The request body must be a JSON object."),
        (b"null", "The request body must be a JSON object."),
        # A lone surrogate escaped in JSON: valid JSON, text no database stores.
        (b'{"a": "\\ud800"}', "The request body holds text that is not valid Unicode."),
        (
            b'{"messages": [{"content": "\\udfff x"}]}',
            "The request body holds text that is not valid Unicode.",
        ),
        # Bytes that are not UTF-8 at all.
        (
            b'{"a": "\xff\xfe"}',
            "The request body holds text that is not valid Unicode.",
        ),
        (b"[" * 100_000 + b"]" * 100_000, "The request body is nested too deeply."),
        (
            b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
            "The request body is nested too deeply.",
        ),
    ],
)
def test_decode_refuses_with_a_reason(body, message):
    assert refused(decode, body).message == message


def test_decode_takes_a_paired_surrogate_escape():
    assert decode(b'{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}


def test_decode_refuses_a_body_over_the_limit_with_413():
    with pytest.raises(ApiError) as caught:
        decode(b" " * (max_body_bytes() + 1))
    assert caught.value.status == 413
    assert caught.value.code == "request_too_large"
    assert f"{max_body_bytes():,}" in caught.value.message


def test_decode_takes_a_body_at_the_limit():
    body = b'{"pad": "' + b"x" * (max_body_bytes() - 11) + b'"}'
    assert len(body) == max_body_bytes()
    assert len(decode(body)["pad"]) == max_body_bytes() - 11


@override_settings(MESSAGE_MAX_CHARS=10)
def test_the_body_limit_is_at_least_one_mebibyte():
    assert max_body_bytes() == 1024 * 1024


@override_settings(MESSAGE_MAX_CHARS=1_000_000)
def test_the_body_limit_grows_with_the_message_limit():
    assert max_body_bytes() == 32_000_000


# ---- OpenAI's chat body ------------------------------------------------------


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


@pytest.mark.parametrize(
    "fields",
    [
        {"tools": [{"type": "function", "function": {"name": "f"}}]},
        {"functions": [{"name": "f", "parameters": {}}]},
    ],
)
def test_openai_tools_are_refused(fields):
    error = refused(openai, **fields)
    assert error.message == "Tools and function calls are not supported."
    assert error.param == "tools"


@pytest.mark.parametrize("tools", [None, []])
def test_openai_no_tools_is_fine(tools):
    assert openai(tools=tools, tool_choice="none").messages == QUESTION


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
    assert error.message == "messages[0].role must be system, user or assistant."


@pytest.mark.parametrize(
    "message",
    [
        {"role": "tool", "content": "42", "tool_call_id": "call_1"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function"}],
        },
    ],
)
def test_openai_tool_messages_are_refused(message):
    error = refused(openai, messages=[*QUESTION, message, *QUESTION])
    assert error.message == "Tools and function calls are not supported."


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
        "The last message must be the user's question, and not blank."
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


def test_openai_sampling_options_are_named_as_ollama_names_them():
    request = openai(
        temperature=0.2,
        top_p=0.9,
        min_p=0.05,
        presence_penalty=1,
        frequency_penalty=-0.5,
        top_k=40,
        seed=-7,
        max_tokens=64,
    )
    assert request.options == {
        "temperature": 0.2,
        "top_p": 0.9,
        "min_p": 0.05,
        "presence_penalty": 1,
        "frequency_penalty": -0.5,
        "top_k": 40,
        "seed": -7,
        "num_predict": 64,
    }


def test_openai_null_options_are_left_out():
    request = openai(
        temperature=None, top_k=None, max_tokens=None, stop=None, seed=None
    )
    assert request.options == {}


def test_openai_num_ctx_is_not_the_clients():
    """The context is the admin's (it sets the model server's memory)."""
    assert openai(num_ctx=131072, options={"num_ctx": 131072}).options == {}


@pytest.mark.parametrize("name", ["temperature", "top_p", "min_p", "frequency_penalty"])
@pytest.mark.parametrize("value", ["0.5", True, [1], {"v": 1}])
def test_openai_numbers_must_be_numbers(name, value):
    error = refused(openai, **{name: value})
    assert error.message == f"{name} must be a number."
    assert error.param == name


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), float("-inf"), 2**63, -(2**70)]
)
def test_openai_numbers_must_be_finite(value):
    # What json.loads makes of NaN, Infinity and -Infinity.
    error = refused(openai, temperature=value)
    assert error.message == "temperature must be a finite number."


def test_openai_nan_from_the_wire_is_refused():
    body = decode(
        json.dumps({"model": MODEL, "messages": QUESTION}).encode()[:-1]
        + b', "top_p": NaN}'
    )
    assert refused(openai_chat, body).message == "top_p must be a finite number."


@pytest.mark.parametrize("name", ["top_k", "seed"])
@pytest.mark.parametrize("value", [1.5, "3", True, 2**63])
def test_openai_integers_must_be_integers(name, value):
    error = refused(openai, **{name: value})
    assert error.message == f"{name} must be an integer."


def test_openai_the_largest_seed_is_taken():
    assert openai(seed=2**63 - 1).options == {"seed": 2**63 - 1}
    assert openai(seed=-(2**63 - 1)).options == {"seed": -(2**63 - 1)}


@pytest.mark.parametrize("value", [0, -1, 1.5, "64", True, None])
def test_openai_max_tokens_must_be_a_positive_integer(value):
    if value is None:
        assert "num_predict" not in openai(max_tokens=value).options
        return
    error = refused(openai, max_tokens=value)
    assert error.message == "max_tokens must be a positive integer."
    assert error.param == "max_tokens"


def test_openai_max_completion_tokens_wins_over_max_tokens():
    assert openai(max_tokens=10, max_completion_tokens=20).options == {
        "num_predict": 20
    }


def test_openai_a_huge_max_tokens_is_capped():
    assert openai(max_tokens=10**30).options == {"num_predict": 2**31 - 1}


def test_openai_one_stop_string():
    assert openai(stop="\n\n").options == {"stop": ["\n\n"]}


def test_openai_stop_list():
    assert openai(stop=["END", "###"]).options == {"stop": ["END", "###"]}


def test_openai_an_empty_stop_list_sets_nothing():
    assert openai(stop=[]).options == {}


def test_openai_stop_sequences_up_to_the_limit():
    stops = [f"s{i}" for i in range(MAX_STOP_SEQUENCES)]
    assert openai(stop=stops).options == {"stop": stops}


@pytest.mark.parametrize(
    "stop",
    [
        "",
        [""],
        ["ok", 3],
        [None],
        {"a": "b"},
        7,
        [f"s{i}" for i in range(MAX_STOP_SEQUENCES + 1)],
    ],
)
def test_openai_bad_stop_is_refused(stop):
    error = refused(openai, stop=stop)
    assert error.message == (
        f"stop must be a string or a list of at most {MAX_STOP_SEQUENCES} "
        "non-empty strings."
    )
    assert error.param == "stop"


@pytest.mark.parametrize(
    ("fields", "think"),
    [
        ({}, None),
        ({"reasoning_effort": "none"}, False),
        ({"reasoning_effort": "minimal"}, False),
        ({"reasoning_effort": "low"}, True),
        ({"reasoning_effort": "medium"}, True),
        ({"reasoning_effort": "high"}, True),
        ({"reasoning_effort": "xhigh"}, True),
        ({"reasoning_effort": None}, None),
        ({"chat_template_kwargs": {"enable_thinking": False}}, False),
        ({"chat_template_kwargs": {"enable_thinking": True}}, True),
        ({"chat_template_kwargs": {}}, None),
        ({"chat_template_kwargs": {"enable_thinking": None}}, None),
        ({"think": False}, False),
        ({"think": True}, True),
        # The template's switch first, then the effort, then Ollama's flag.
        (
            {
                "chat_template_kwargs": {"enable_thinking": True},
                "reasoning_effort": "none",
            },
            True,
        ),
        ({"reasoning_effort": "none", "think": True}, False),
        (
            {"chat_template_kwargs": {"other": 1}, "reasoning_effort": "high"},
            True,
        ),
    ],
)
def test_openai_thinking_switches(fields, think):
    assert openai(**fields).think is think


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"reasoning_effort": "maximum"},
            "reasoning_effort must be none, minimal, low, medium or high.",
        ),
        (
            {"reasoning_effort": True},
            "reasoning_effort must be none, minimal, low, medium or high.",
        ),
        ({"chat_template_kwargs": "on"}, "chat_template_kwargs must be an object."),
        (
            {"chat_template_kwargs": {"enable_thinking": "false"}},
            "enable_thinking must be true or false.",
        ),
        ({"think": "high"}, "think must be true or false."),
    ],
)
def test_openai_bad_thinking_switches(fields, message):
    assert refused(openai, **fields).message == message


def test_openai_include_usage():
    assert openai(stream=True, stream_options={"include_usage": True}).include_usage
    assert not openai(stream=True, stream_options={}).include_usage
    assert not openai(stream=True, stream_options=None).include_usage


def test_openai_stream_options_must_be_an_object():
    error = refused(openai, stream=True, stream_options=True)
    assert error.message == "stream_options must be an object."


# ---- Ollama's chat body ------------------------------------------------------


def test_ollama_plain_question_streams_by_default():
    request = ollama()
    assert request.model == MODEL
    assert request.messages == QUESTION
    assert request.stream is True
    assert request.think is None
    assert request.options == {}


def test_ollama_unknown_fields_are_ignored():
    request = ollama(keep_alive="5m", logprobs=False, raw=True, other={"a": 1})
    assert request.messages == QUESTION
    assert request.options == {}


def test_ollama_not_streamed():
    assert ollama(stream=False).stream is False


def test_ollama_options_are_taken_as_named():
    request = ollama(
        options={
            "temperature": 0.1,
            "top_p": 0.5,
            "repeat_penalty": 1.1,
            "top_k": 5,
            "seed": 3,
            "num_predict": 12,
            "stop": ["\n"],
            # Not the client's: the admin's context, and what the site ignores.
            "num_ctx": 65536,
            "num_gpu": 99,
            "mirostat": 2,
        }
    )
    assert request.options == {
        "temperature": 0.1,
        "top_p": 0.5,
        "repeat_penalty": 1.1,
        "top_k": 5,
        "seed": 3,
        "num_predict": 12,
        "stop": ["\n"],
    }


def test_ollama_num_predict_minus_one_is_no_limit():
    assert ollama(options={"num_predict": -1}).options == {}


@pytest.mark.parametrize("value", [0, -2, 1.5, "10"])
def test_ollama_bad_num_predict(value):
    error = refused(ollama, options={"num_predict": value})
    assert error.message == "num_predict must be a positive integer."


def test_ollama_options_must_be_an_object():
    assert refused(ollama, options=[1]).message == "options must be an object."


def test_ollama_bad_option_values():
    assert refused(ollama, options={"temperature": "hot"}).message == (
        "temperature must be a number."
    )
    assert refused(ollama, options={"stop": [""]}).param == "stop"


def test_ollama_repeat_penalty_is_not_an_openai_field():
    assert openai(repeat_penalty=1.3).options == {}


@pytest.mark.parametrize(
    ("think", "expected"),
    [(None, None), (True, True), (False, False), ("low", True), ("high", True)],
)
def test_ollama_think(think, expected):
    assert ollama(think=think).think is expected


@pytest.mark.parametrize("think", ["yes", "max", 1, ["high"]])
def test_ollama_bad_think(think):
    assert refused(ollama, think=think).message == (
        'think must be true, false, "low", "medium" or "high".'
    )


def test_ollama_tools_are_refused():
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert refused(ollama, tools=tools).message == "Tools are not supported."


def test_ollama_structured_output_is_refused():
    error = refused(ollama, format="json")
    assert error.message == "Structured output (format) is not supported."
    assert refused(ollama, format={"type": "object"}).message == error.message
    assert ollama(format="").messages == QUESTION


def test_ollama_images_are_refused():
    message = {"role": "user", "content": "What is this?", "images": ["iVBORw0KGgo="]}
    assert refused(ollama, messages=[message]).message == "Images are not supported."


def test_ollama_content_must_be_a_string():
    parts = [{"type": "text", "text": "hi"}]
    error = refused(ollama, messages=[{"role": "user", "content": parts}])
    assert error.message == "messages[0].content must be a string."


def test_ollama_tool_messages_are_refused():
    messages = [*QUESTION, {"role": "tool", "content": "42"}, *QUESTION]
    error = refused(ollama, messages=messages)
    assert error.message == "Tools and function calls are not supported."


def test_ollama_model_name_with_a_nul_character():
    assert refused(ollama_chat, {"model": "m\x00", "messages": QUESTION}).param == (
        "model"
    )
