"""`chat.api.tools` through `chat.api.requests`: a client's own tools in either
dialect (the function form, OpenAI's `tool_choice` and `parallel_tool_calls`),
the calls and results of its history read into the OpenAI shape the model-server
clients take, and each refusal a 400 that says what is wrong. No server, no
database: marked `smoke`."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from chat.api.tools import MAX_TOOLS, MAX_TOOLS_CHARS
from chat.models import ClientTools
from tests.api.requests.reading import QUESTION, ollama, openai, refused

pytestmark = pytest.mark.smoke

PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": PARAMETERS,
    },
}
CALL = {
    "id": "call_7",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
}
ASKED = {"role": "assistant", "content": None, "tool_calls": [CALL]}
RESULT = {"role": "tool", "tool_call_id": "call_7", "content": "Rain, 4 °C."}
# The same round trip as the ollama client sends it (no ids).
OLLAMA_ASKED = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    ],
}
OLLAMA_RESULT = {"role": "tool", "tool_name": "get_weather", "content": "Rain, 4 °C."}


def tool(name: str, **function: object) -> dict[str, object]:
    return {"type": "function", "function": {"name": name, **function}}


def test_openai_tools_are_offered_as_given():
    request = openai(tools=[WEATHER])
    assert request.tools == ClientTools([WEATHER], None, True)


def test_ollama_tools_are_offered_too_and_type_may_be_left_out():
    bare = {"function": WEATHER["function"]}
    assert ollama(tools=[bare]).tools == ClientTools([WEATHER], None, True)


def test_only_what_the_model_servers_take_is_kept():
    given = tool("f", description="d", parameters=PARAMETERS, strict=True, extra=1)
    given["cache_control"] = {"type": "ephemeral"}
    [offered] = openai(tools=[given]).tools.tools
    assert offered == tool("f", description="d", parameters=PARAMETERS, strict=True)


def test_a_tool_without_parameters_takes_none():
    [offered] = openai(tools=[tool("now")]).tools.tools
    assert offered == tool(
        "now", description="", parameters={"type": "object", "properties": {}}
    )


@pytest.mark.parametrize(
    ("choice", "kept"),
    [
        ("auto", None),
        (None, None),
        ("required", "required"),
        (
            {"type": "function", "function": {"name": "get_weather"}},
            {"type": "function", "function": {"name": "get_weather"}},
        ),
    ],
)
def test_tool_choice(choice, kept):
    assert openai(tools=[WEATHER], tool_choice=choice).tools.choice == kept


def test_tool_choice_none_offers_nothing():
    assert openai(tools=[WEATHER], tool_choice="none").tools is None


def test_parallel_tool_calls_false_is_kept():
    assert openai(tools=[WEATHER], parallel_tool_calls=False).tools.parallel is False
    assert openai(tools=[WEATHER], parallel_tool_calls=None).tools.parallel is True


def test_a_tool_choice_naming_a_missing_function_is_refused():
    choice = {"type": "function", "function": {"name": "get_time"}}
    error = refused(openai, tools=[WEATHER], tool_choice=choice)
    assert error.param == "tool_choice"
    assert error.message == (
        'tool_choice names the function "get_time", which is not among the tools.'
    )


@pytest.mark.parametrize(
    "choice", ["always", 1, {"type": "function"}, {"function": {"name": "f"}}]
)
def test_a_bad_tool_choice_is_refused(choice):
    error = refused(openai, tools=[WEATHER], tool_choice=choice)
    assert error.param == "tool_choice"
    assert error.message.startswith('tool_choice must be "auto", "none", "required"')


def test_a_required_tool_choice_needs_tools():
    error = refused(openai, tool_choice="required")
    assert error.message == (
        "tool_choice asks for a tool call, but the request offers no tools."
    )


def test_too_many_tools_are_refused():
    tools = [tool(f"t{i}") for i in range(MAX_TOOLS + 1)]
    error = refused(openai, tools=tools)
    assert error.param == "tools"
    assert error.message == f"tools has {MAX_TOOLS + 1} tools; the limit is 128."
    assert openai(tools=tools[:MAX_TOOLS]).tools is not None


def test_tools_over_the_size_limit_are_refused():
    big = tool("big", description="x" * MAX_TOOLS_CHARS)
    error = refused(ollama, tools=[big])
    assert error.message.startswith("tools is 200,")
    assert error.message.endswith("characters of JSON; the limit is 200,000.")


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ("get_weather", "tools must be a list of tools."),
        ([3], "tools[0] must be an object."),
        (
            [{"type": "code_interpreter"}],
            'tools[0].type must be "function": only function tools are supported.',
        ),
        ([{"type": "function"}], "tools[0].function must be an object."),
        (
            [tool("get weather")],
            "tools[0].function.name must be 1 to 64 letters, digits, underscores "
            "or hyphens.",
        ),
        (
            [tool("x" * 65)],
            "tools[0].function.name must be 1 to 64 letters, digits, "
            "underscores or hyphens.",
        ),
        ([tool("f", description=7)], "tools[0].function.description must be a string."),
        (
            [tool("f", parameters={"type": "array"})],
            'tools[0].function.parameters must be a JSON Schema object ({"type": '
            '"object", ...}).',
        ),
        (
            [tool("f", parameters="{}")],
            'tools[0].function.parameters must be a JSON Schema object ({"type": '
            '"object", ...}).',
        ),
        ([WEATHER, WEATHER], 'tools[1]: two tools are named "get_weather".'),
    ],
)
def test_a_malformed_tools_list_is_refused(tools, message):
    error = refused(openai, tools=tools)
    assert error.param == "tools"
    assert error.message == message


def test_openai_tools_need_their_type():
    error = refused(openai, tools=[{"function": WEATHER["function"]}])
    assert error.message.startswith('tools[0].type must be "function"')


def test_the_legacy_functions_are_refused():
    error = refused(openai, functions=[{"name": "f", "parameters": {}}])
    assert error.param == "functions"
    assert error.message == (
        "The legacy functions and function_call fields are not supported: use "
        "tools and tool_choice."
    )


def test_parallel_tool_calls_must_be_a_boolean():
    assert refused(openai, parallel_tool_calls="no").param == "parallel_tool_calls"


def test_openai_a_round_trip_reaches_the_model_in_the_openai_shape():
    request = openai(messages=[*QUESTION, ASKED, RESULT], tools=[WEATHER])
    assert request.messages == [
        *QUESTION,
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {
            "role": "tool",
            "content": "Rain, 4 °C.",
            "tool_call_id": "call_7",
            "name": "get_weather",
        },
    ]


def test_ollama_a_round_trip_gets_ids_and_arguments_as_json_text():
    request = ollama(messages=[*QUESTION, OLLAMA_ASKED, OLLAMA_RESULT])
    [_, asked, result] = request.messages
    [call] = asked["tool_calls"]
    assert call == {
        "id": "call_1_0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
    }
    assert json.loads(call["function"]["arguments"]) == {"city": "Oslo"}
    assert result == {
        "role": "tool",
        "content": "Rain, 4 °C.",
        "tool_call_id": "call_1_0",
        "name": "get_weather",
    }


def test_ollama_results_find_their_calls_by_name_then_in_order():
    asked = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"function": {"name": "a", "arguments": {}}},
            {"function": {"name": "b", "arguments": {}}},
            {"function": {"name": "a", "arguments": {}}},
        ],
    }
    results = [
        {"role": "tool", "tool_name": "b", "content": "1"},
        {"role": "tool", "content": "2"},
        {"role": "tool", "tool_name": "a", "content": "3"},
    ]
    request = ollama(messages=[*QUESTION, asked, *results])
    answered = [(m["tool_call_id"], m["name"]) for m in request.messages[2:]]
    assert answered == [("call_1_1", "b"), ("call_1_0", "a"), ("call_1_2", "a")]
    error = refused(ollama, messages=[*QUESTION, asked, *results, results[1]])
    assert error.message == (
        "messages[5] is a tool's result, but no earlier assistant message called "
        "a tool."
    )


def test_ollama_a_result_for_a_tool_not_called_is_refused():
    result = {**OLLAMA_RESULT, "tool_name": "get_time"}
    error = refused(ollama, messages=[*QUESTION, OLLAMA_ASKED, result])
    assert error.message == (
        "messages[2] is a tool's result, but no earlier assistant message called "
        '"get_time".'
    )


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (
            {"role": "tool", "content": "x"},
            "messages[2].tool_call_id must be a string of 1 to 200 characters.",
        ),
        (
            {"role": "tool", "tool_call_id": "call_8", "content": "x"},
            'messages[2] answers the tool call "call_8", which no earlier assistant '
            "message made (or another message answered).",
        ),
    ],
)
def test_openai_a_result_must_answer_a_call(result, message):
    error = refused(openai, messages=[*QUESTION, ASKED, result])
    assert error.param == "messages"
    assert error.message == message


def test_openai_a_call_is_answered_once():
    error = refused(openai, messages=[*QUESTION, ASKED, RESULT, RESULT])
    assert error.message.startswith('messages[3] answers the tool call "call_7"')


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        ("call", "messages[1].tool_calls must be a list of at most 128 calls."),
        ([{"id": "c"}], "messages[1].tool_calls[0].function must be an object."),
        (
            [{"function": {"name": "f", "arguments": "{}"}}],
            "messages[1].tool_calls[0].id must be a string of 1 to 200 characters.",
        ),
        (
            [{"id": "c", "function": {"name": "", "arguments": "{}"}}],
            "messages[1].tool_calls[0].function.name must be a string of 1 to 200 "
            "characters.",
        ),
        (
            [{"id": "c", "function": {"name": "f", "arguments": {"a": 1}}}],
            "messages[1].tool_calls[0].function.arguments must be a string of JSON "
            "text.",
        ),
    ],
)
def test_openai_malformed_calls_are_refused(calls, message):
    asked = {"role": "assistant", "content": None, "tool_calls": calls}
    assert refused(openai, messages=[*QUESTION, asked, *QUESTION]).message == message


def test_ollama_arguments_must_be_an_object():
    asked = {
        "role": "assistant",
        "tool_calls": [{"function": {"name": "f", "arguments": [1]}}],
    }
    error = refused(ollama, messages=[*QUESTION, asked, *QUESTION])
    assert error.message == (
        "messages[1].tool_calls[0].function.arguments must be a JSON object."
    )


def test_only_an_assistant_calls_tools():
    asking = {"role": "user", "content": "x", "tool_calls": [CALL]}
    error = refused(openai, messages=[asking])
    assert error.message == "messages[0]: only an assistant calls tools."


@override_settings(MESSAGE_MAX_CHARS=100)
def test_a_call_counts_in_its_message_size():
    call = {**CALL, "function": {"name": "f", "arguments": "x" * 101}}
    asked = {"role": "assistant", "content": "", "tool_calls": [call]}
    error = refused(openai, messages=[*QUESTION, asked, *QUESTION])
    assert error.message == "messages[1] is 101 characters; the limit is 100."


def test_a_blank_tool_result_may_come_last():
    result = {**RESULT, "content": ""}
    assert openai(messages=[*QUESTION, ASKED, result]).messages[-1]["content"] == ""
