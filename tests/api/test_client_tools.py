"""A client's own tools over the API, with the official `openai` and `ollama`
clients against the live server: tools offered and a round trip of calls and
results are taken (no more 400), reach the model server and count in the
prompt; the history's calls and results have no rows of their own; a malformed
tools list, a tool_choice naming a missing function and too many tools are
each a 400 in the dialect's shape, storing nothing.

The calls a model writes coming back are tests/api/test_tool_calls.py (the
response's shape); streamed from a model server end to end once the
simulator and the engine give tool calls (issue 42, items 1 and 7)."""

from __future__ import annotations

import json

import ollama
import openai
import pytest

from chat.api.tools import MAX_TOOLS
from chat.models import Message
from tests.api.client_tools import WEATHER, get_weather
from tests.api.conftest import ASK, MODEL, QUESTION, stored_answer
from tests.api.openai_client.asking import ask, texts

pytestmark = pytest.mark.django_db(transaction=True)

ASKED = {
    "role": "assistant",
    "content": "Let me look.",
    "tool_calls": [
        {
            "id": "call_7",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        }
    ],
}
RESULT = {"role": "tool", "tool_call_id": "call_7", "content": "Rain, 4 °C."}
STORE = {"X-Chatsite-Store": "yes"}


def test_openai_tools_are_taken_and_count_in_the_prompt(oa, simulator):
    without = stored_answer(Message.Status.DONE) if ask(oa, stream=False) else None
    assert without is not None
    without.delete()
    chunks = list(ask(oa, stream=True, tools=[WEATHER], tool_choice="auto"))
    assert texts(chunks)[1]
    assert chunks[-1].choices[0].finish_reason == "stop"  # the model called none
    answer = stored_answer(Message.Status.DONE)
    assert answer.prompt_chars - without.prompt_chars == len(
        json.dumps([WEATHER], ensure_ascii=False)
    )


def test_openai_a_round_trip_reaches_the_model(oa, simulator):
    messages = [*ASK, ASKED, RESULT]
    completion = ask(oa, messages=messages, tools=[WEATHER], extra_headers=STORE)
    assert completion.choices[0].message.content
    sent = simulator.log[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[2]["content"] == "Rain, 4 °C."
    answer = stored_answer(Message.Status.DONE)
    # The question and the answer with text have rows; the result has none.
    rows = answer.conversation.messages.order_by("pk")
    assert [(m.role, m.content) for m in rows] == [
        ("user", QUESTION),
        ("assistant", "Let me look."),
        ("assistant", answer.content),
    ]
    assert answer.history_sent == 3


def test_openai_a_malformed_tools_list_is_400(oa, simulator):
    bad = {"type": "function", "function": {"name": "get weather"}}
    with pytest.raises(openai.BadRequestError) as caught:
        ask(oa, tools=[bad])
    assert caught.value.param == "tools"
    assert caught.value.code == "invalid_request"
    assert "tools[0].function.name must be 1 to 64 letters" in caught.value.message
    assert not Message.objects.exists()


def test_openai_a_tool_choice_naming_a_missing_function_is_400(oa, simulator):
    choice = {"type": "function", "function": {"name": "get_time"}}
    with pytest.raises(openai.BadRequestError) as caught:
        ask(oa, tools=[WEATHER], tool_choice=choice, stream=True)
    assert caught.value.param == "tool_choice"
    assert '"get_time", which is not among the tools' in caught.value.message
    assert not Message.objects.exists()


def test_openai_too_many_tools_is_400(oa, simulator):
    tools = [
        {"type": "function", "function": {"name": f"t{i}"}}
        for i in range(MAX_TOOLS + 1)
    ]
    with pytest.raises(openai.BadRequestError) as caught:
        ask(oa, tools=tools)
    assert caught.value.body["message"] == "tools has 129 tools; the limit is 128."
    assert not Message.objects.exists()


def test_openai_a_result_for_no_call_is_400(oa, simulator):
    with pytest.raises(openai.BadRequestError) as caught:
        ask(oa, messages=[*ASK, RESULT])
    assert caught.value.body["message"].startswith(
        'messages[1] answers the tool call "call_7"'
    )


def test_ollama_functions_as_tools_are_taken(ol, simulator):
    # The ollama client makes a tool of a Python function (its docstring).
    parts = list(ol.chat(model=MODEL, messages=ASK, tools=[get_weather], stream=True))
    assert "".join(p.message.content for p in parts)
    assert parts[-1].done_reason == "stop"
    whole = ol.chat(model=MODEL, messages=ASK, tools=[get_weather], stream=False)
    assert whole.message.content and whole.message.tool_calls is None


def test_ollama_a_round_trip_reaches_the_model(ol, simulator):
    asked = ollama.Message(
        role="assistant",
        content="",
        tool_calls=[
            ollama.Message.ToolCall(
                function=ollama.Message.ToolCall.Function(
                    name="get_weather", arguments={"city": "Oslo"}
                )
            )
        ],
    )
    result = ollama.Message(role="tool", tool_name="get_weather", content="Rain.")
    response = ol.chat(
        model=MODEL, messages=[*ASK, asked, result], tools=[get_weather], stream=False
    )
    assert response.message.content
    sent = simulator.log[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[2]["content"] == "Rain."
    # The call that only called a tool has no row; the question has.
    answer = stored_answer(Message.Status.DONE)
    assert [m.role for m in answer.conversation.messages.order_by("pk")] == [
        "user",
        "assistant",
    ]


def test_ollama_a_malformed_tools_list_is_400(ol, simulator):
    # What the client's own checks let through: a name no model server takes.
    bad = {"type": "function", "function": {"name": "get the weather"}}
    with pytest.raises(ollama.ResponseError) as caught:
        ol.chat(model=MODEL, messages=ASK, tools=[bad], stream=False)
    assert caught.value.status_code == 400
    assert caught.value.error == (
        "tools[0].function.name must be 1 to 64 letters, digits, underscores or "
        "hyphens."
    )
    assert not Message.objects.exists()


def test_ollama_too_many_tools_is_400(ol, simulator):
    tools = [{"type": "function", "function": {"name": f"t{i}"}} for i in range(200)]
    with pytest.raises(ollama.ResponseError) as caught:
        list(ol.chat(model=MODEL, messages=ASK, tools=tools, stream=True))
    assert (caught.value.status_code, caught.value.error) == (
        400,
        "tools has 200 tools; the limit is 128.",
    )


def test_ollama_a_result_for_a_tool_not_called_is_400(ol, simulator):
    result = {"role": "tool", "tool_name": "get_weather", "content": "Rain."}
    with pytest.raises(ollama.ResponseError) as caught:
        ol.chat(model=MODEL, messages=[*ASK, result], stream=False)
    assert caught.value.error == (
        "messages[1] is a tool's result, but no earlier assistant message called "
        '"get_weather".'
    )
