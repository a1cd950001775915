"""`chat.api.requests`: OpenAI's sampling options named as Ollama names them,
numbers that must be numbers, the answer's length, stop sequences, the thinking
switches and the usage asked for; each refusal a 400 that says what is
wrong. No server, no database: marked `smoke`, so they run on the zero-config
defaults too."""

from __future__ import annotations

import json

import pytest

from chat.api.requests import MAX_STOP_SEQUENCES, decode, openai_chat
from tests.api.requests.reading import MODEL, QUESTION, openai, refused

pytestmark = pytest.mark.smoke


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
