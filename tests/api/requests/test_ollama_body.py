"""`chat.api.requests`: Ollama's chat body read into one `ChatRequest`: streamed by
default, its options taken as named, `think`, and what is refused (structured
output, images); each refusal a 400 that says what is
wrong. No server, no database: marked `smoke`, so they run on the zero-config
defaults too."""

from __future__ import annotations

import pytest

from chat.api.requests import ollama_chat
from tests.api.requests.reading import MODEL, QUESTION, ollama, openai, refused

pytestmark = pytest.mark.smoke


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


def test_ollama_a_tool_result_without_a_call_is_refused():
    messages = [*QUESTION, {"role": "tool", "content": "42"}, *QUESTION]
    error = refused(ollama, messages=messages)
    assert error.message == (
        "messages[1] is a tool's result, but no earlier assistant message called "
        "a tool."
    )


def test_ollama_model_name_with_a_nul_character():
    assert refused(ollama_chat, {"model": "m\x00", "messages": QUESTION}).param == (
        "model"
    )
