"""Tool calls on the simulator's Ollama side (`/api/chat` with `tools`), over
real HTTP and through the official `ollama` client."""

from __future__ import annotations

import json
from typing import Any

import httpx
import ollama
import pytest

from chat.simulator import RUNNER_STOPPED, SimulatorServer
from chat.simulator.toolcalls.choosing import Call
from chat.simulator.toolcalls.dialects import inline_pieces
from tests.simulator.asking import PLAIN, THINKER, chat_lines
from tests.simulator.toolcalls.offering import (
    ASK_BOTH,
    ASK_WEATHER,
    RESULT,
    TOOLS,
    WEATHER_ARGS,
    ollama_history,
)


def calls_of(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for line in lines for c in line["message"].get("tool_calls") or []]


def test_a_call_streams_after_the_thinking_whole_in_one_chunk(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    lines = chat_lines(client, messages=ASK_WEATHER, tools=TOOLS)
    *chunks, call_chunk, done = lines
    assert all(c["message"].get("thinking") for c in chunks)
    thinking = "".join(c["message"]["thinking"] for c in chunks)
    assert "get_weather" in thinking
    assert call_chunk["done"] is False
    assert call_chunk["message"]["content"] == ""
    [call] = call_chunk["message"]["tool_calls"]
    assert call["function"] == {
        "index": 0,
        "name": "get_weather",
        "arguments": WEATHER_ARGS,
    }
    assert call["id"].startswith("call_") and len(call["id"]) == 13
    assert done["done"] is True and done["done_reason"] == "stop"
    assert done["message"] == {"role": "assistant", "content": ""}
    # The call's tokens count though the call went out whole.
    written = len(inline_pieces([Call(0, "get_weather", json.dumps(WEATHER_ARGS))]))
    assert done["eval_count"] == len(chunks) + written
    entry = sim.log[-1]
    assert entry.finished and entry.thinking and entry.done_reason == "stop"


def test_several_calls_in_one_reply_each_in_its_chunk(client: httpx.Client) -> None:
    lines = chat_lines(client, messages=ASK_BOTH, tools=TOOLS, think=False)
    assert not any(line["message"].get("thinking") for line in lines)
    assert [len(line["message"].get("tool_calls") or []) for line in lines] == [1, 1, 0]
    calls = calls_of(lines)
    assert [(c["function"]["index"], c["function"]["name"]) for c in calls] == [
        (0, "everything__echo"),
        (1, "get_weather"),
    ]
    assert calls[0]["function"]["arguments"] == {"message": "say hello world"}
    assert calls[0]["id"] != calls[1]["id"]


def test_a_call_leaves_when_its_last_token_is_written(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.tps = 100
    sim.config.record_times = True
    chat_lines(client, messages=ASK_WEATHER, tools=TOOLS, think=False)
    written = len(inline_pieces([Call(0, "get_weather", json.dumps(WEATHER_ARGS))]))
    [sent] = sim.log[-1].times
    # Never before its time on the schedule (from the request's start).
    assert sent - sim.log[-1].started >= (written - 1) / 100


def test_not_streamed_the_message_holds_the_calls(client: httpx.Client) -> None:
    body = {"model": THINKER, "messages": ASK_BOTH, "tools": TOOLS, "stream": False}
    message = client.post("/api/chat", json=body).json()["message"]
    assert message["content"] == "" and "get_weather" in message["thinking"]
    assert [c["function"]["name"] for c in message["tool_calls"]] == [
        "everything__echo",
        "get_weather",
    ]


def test_no_call_when_no_tool_is_named(client: httpx.Client) -> None:
    question = [{"role": "user", "content": "How warm is Paris?"}]
    lines = chat_lines(client, messages=question, tools=TOOLS)
    assert calls_of(lines) == []
    assert "".join(line["message"]["content"] for line in lines)


def test_the_answer_after_the_results_quotes_them(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    lines = chat_lines(client, messages=ollama_history(), tools=TOOLS)
    assert calls_of(lines) == []
    content = "".join(line["message"]["content"] for line in lines)
    assert f"`get_weather` returned:\n\n> {RESULT}" in content
    assert lines[-1]["done_reason"] == "stop"


def test_scripted_calls_an_unknown_tool_and_malformed_arguments(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.tool_script = [
        [
            {"name": "no_such_tool", "arguments": {"x": 1}, "id": "call_fixed"},
            {"name": "get_weather", "arguments": '{"location": "Par'},
        ]
    ]
    lines = chat_lines(client, messages=ASK_WEATHER, tools=TOOLS, think=False)
    [call] = calls_of(lines)
    assert call == {
        "id": "call_fixed",
        "function": {"index": 0, "name": "no_such_tool", "arguments": {"x": 1}},
    }
    # Ollama's parser cannot read the second: it is passed on as content.
    content = "".join(line["message"]["content"] for line in lines)
    assert content == (
        '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Par}'
        "\n</tool_call>"
    )


def test_a_loop_of_calls_goes_on_while_results_come_back(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.tool_script = [[{"name": "get_weather", "arguments": {}}]]
    sim.config.tool_loop = True
    history = ollama_history()
    for _ in range(3):
        [call] = calls_of(chat_lines(client, messages=history, tools=TOOLS))
        assert call["function"]["name"] == "get_weather"
        history += history[1:3]


def test_num_predict_inside_a_call_stops_with_length(client: httpx.Client) -> None:
    lines = chat_lines(
        client,
        messages=ASK_WEATHER,
        tools=TOOLS,
        think=False,
        options={"num_predict": 5},
    )
    assert calls_of(lines) == []
    assert lines[-1]["done_reason"] == "length" and lines[-1]["eval_count"] == 5


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"model": PLAIN, "tools": TOOLS}, 400, f'"{PLAIN}" does not support tools'),
        (
            {"tools": {"type": "function"}},
            400,
            "json: cannot unmarshal object into Go struct field ChatRequest.tools "
            "of type api.Tools",
        ),
        ({"tools": ["get_weather"]}, 400, "json: cannot unmarshal string"),
        (
            # The OpenAI shape: a past call's arguments as JSON text.
            {
                "messages": [
                    *ASK_WEATHER,
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {"function": {"name": "get_weather", "arguments": "{}"}}
                        ],
                    },
                ]
            },
            400,
            "json: cannot unmarshal string into Go struct field "
            "ToolCallFunction.messages.tool_calls.function.arguments",
        ),
    ],
)
def test_refused_like_ollama(
    client: httpx.Client, body: dict[str, Any], status: int, error: str
) -> None:
    body = {"model": THINKER, "messages": ASK_WEATHER, **body}
    response = client.post("/api/chat", json=body)
    assert response.status_code == status
    assert response.json()["error"].startswith(error)


def test_a_plain_model_without_tools_still_answers(client: httpx.Client) -> None:
    lines = chat_lines(client, model=PLAIN, messages=ASK_WEATHER, tools=[])
    assert calls_of(lines) == [] and lines[-1]["done_reason"] == "stop"


# -- the official client -----------------------------------------------------------


def test_the_ollama_client_reads_the_calls_streamed(sim: SimulatorServer) -> None:
    client = ollama.Client(host=sim.url)
    parts = list(client.chat(THINKER, messages=ASK_BOTH, tools=TOOLS, stream=True))
    calls = [c for part in parts for c in part.message.tool_calls or []]
    assert [(c.function.name, dict(c.function.arguments)) for c in calls] == [
        ("everything__echo", {"message": "say hello world"}),
        ("get_weather", {"location": "Oslo", "unit": "celsius", "days": 1}),
    ]
    assert parts[-1].done and parts[-1].done_reason == "stop"


def test_the_ollama_client_sends_results_back_and_reads_the_answer(
    sim: SimulatorServer,
) -> None:
    client = ollama.Client(host=sim.url)
    first = client.chat(THINKER, messages=ASK_WEATHER, tools=TOOLS, think=False)
    [call] = first.message.tool_calls or []
    assert dict(call.function.arguments) == WEATHER_ARGS
    messages: list[Any] = [
        *ASK_WEATHER,
        first.message,
        {"role": "tool", "tool_name": call.function.name, "content": RESULT},
    ]
    answer = client.chat(THINKER, messages=messages, tools=TOOLS, think=False)
    assert f"> {RESULT}" in (answer.message.content or "")
    assert not answer.message.tool_calls
    sent = sim.log[-1].body["messages"][1]["tool_calls"][0]["function"]
    assert sent == {"name": "get_weather", "arguments": WEATHER_ARGS}


def test_an_error_before_the_call_is_written_ends_the_stream(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.error_after = 0
    lines = chat_lines(client, messages=ASK_WEATHER, tools=TOOLS, think=False)
    assert lines == [{"error": RUNNER_STOPPED}]
    assert sim.log[-1].fault == "error"
