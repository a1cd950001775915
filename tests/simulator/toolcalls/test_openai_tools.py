"""Tool calls on the simulator's OpenAI-compatible side
(`/v1/chat/completions` with `tools` and `tool_choice`), as vLLM with a tool
parser streams them and as Qwen3 writes them inline, over real HTTP and
through the official `openai` client."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from chat.simulator import SimulatorServer
from chat.simulator.openai import decode_events
from tests.simulator.asking import THINKER
from tests.simulator.toolcalls.offering import (
    ASK_BOTH,
    ASK_WEATHER,
    RESULT,
    TOOLS,
    WEATHER_ARGS,
    openai_history,
)

PATH = "/v1/chat/completions"


def stream(client: httpx.Client, **body: Any) -> list[Any]:
    body = {"model": THINKER, "messages": ASK_WEATHER, "tools": TOOLS, **body}
    with client.stream("POST", PATH, json={**body, "stream": True}) as response:
        assert response.status_code == 200
        return decode_events(response.read())


def deltas(events: list[Any]) -> list[dict[str, Any]]:
    return [e["choices"][0]["delta"] for e in events if isinstance(e, dict)]


def finish(events: list[Any]) -> str:
    return str(events[-2]["choices"][0]["finish_reason"])


def text(events: list[Any], field: str = "content") -> str:
    return "".join(d.get(field) or "" for d in deltas(events))


def test_a_call_streams_its_head_then_its_arguments_token_by_token(
    client: httpx.Client,
) -> None:
    events = stream(client)
    parts = [d["tool_calls"] for d in deltas(events) if "tool_calls" in d]
    assert all(len(p) == 1 for p in parts)
    head, *pieces = [p[0] for p in parts]
    assert head["index"] == 0 and head["type"] == "function"
    assert head["id"].startswith("chatcmpl-tool-")
    assert head["function"] == {"name": "get_weather", "arguments": ""}
    assert all(
        p == {"index": 0, "function": {"arguments": p["function"]["arguments"]}}
        for p in pieces
    )
    assert len(pieces) > 5  # a token each
    arguments = "".join(p["function"]["arguments"] for p in pieces)
    assert json.loads(arguments) == WEATHER_ARGS
    # Thinking first, no content, and the reply asks for tools.
    assert "get_weather" in text(events, "reasoning_content")
    assert text(events) == ""
    assert finish(events) == "tool_calls"


def test_several_calls_follow_each_other_by_index(client: httpx.Client) -> None:
    events = stream(client, messages=ASK_BOTH)
    heads = [p for d in deltas(events) for p in d.get("tool_calls") or [] if "id" in p]
    assert [(h["index"], h["function"]["name"]) for h in heads] == [
        (0, "everything__echo"),
        (1, "get_weather"),
    ]
    assert heads[0]["id"] != heads[1]["id"]


def test_not_streamed_the_message_holds_the_calls(client: httpx.Client) -> None:
    body = {"model": THINKER, "messages": ASK_WEATHER, "tools": TOOLS}
    choice = client.post(PATH, json=body).json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["content"] is None and "get_weather" in message["reasoning_content"]
    [call] = message["tool_calls"]
    assert call["type"] == "function" and call["id"].startswith("chatcmpl-tool-")
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == WEATHER_ARGS


@pytest.mark.parametrize("where", ["config", "request"])
def test_inline_tags_for_a_server_without_a_tool_parser(
    sim: SimulatorServer, client: httpx.Client, where: str
) -> None:
    if where == "config":
        sim.config.tool_format = "tags"
        events = stream(client, messages=ASK_BOTH)
    else:
        events = stream(client, messages=ASK_BOTH, sim_tool_format="tags")
    pieces = [d["content"] for d in deltas(events) if d.get("content")]
    assert pieces[:2] == ["<tool_call>", "\n"]
    assert len(pieces) > 20  # a token at a time
    assert text(events) == (
        '<tool_call>\n{"name": "everything__echo", "arguments": '
        '{"message": "say hello world"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": '
        '{"location": "Oslo", "unit": "celsius", "days": 1}}\n</tool_call>'
    )
    assert not any("tool_calls" in d for d in deltas(events))
    assert finish(events) == "stop"


def test_inline_tags_follow_the_thinking_in_the_content(client: httpx.Client) -> None:
    events = stream(client, sim_reasoning="tags", sim_tool_format="tags")
    content = text(events)
    assert content.startswith("<think>\n") and "get_weather" in content
    assert content.index("</think>") < content.index("<tool_call>")


def test_unknown_tool_format_is_400(client: httpx.Client) -> None:
    body = {"model": THINKER, "messages": ASK_WEATHER, "sim_tool_format": "xml"}
    assert client.post(PATH, json=body).status_code == 400


@pytest.mark.parametrize(
    ("choice", "calls"),
    [
        ("none", []),
        ("auto", ["get_weather"]),
        ("required", ["get_weather"]),
        (
            {"type": "function", "function": {"name": "everything__echo"}},
            ["everything__echo"],
        ),
    ],
)
def test_tool_choice(client: httpx.Client, choice: Any, calls: list[str]) -> None:
    events = stream(client, tool_choice=choice)
    names = [
        p["function"]["name"]
        for d in deltas(events)
        for p in d.get("tool_calls") or []
        if "id" in p
    ]
    assert names == calls
    assert finish(events) == ("tool_calls" if calls else "stop")


def test_tool_choice_required_calls_even_unnamed(client: httpx.Client) -> None:
    question = [{"role": "user", "content": "How warm is it in Rome?"}]
    body = {"model": THINKER, "messages": question, "tools": TOOLS}
    choice = client.post(PATH, json={**body, "tool_choice": "required"}).json()
    [call] = choice["choices"][0]["message"]["tool_calls"]
    assert json.loads(call["function"]["arguments"])["location"] == "Rome"
    auto = client.post(PATH, json=body).json()["choices"][0]
    assert auto["finish_reason"] == "stop" and "tool_calls" not in auto["message"]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"tools": {"type": "function"}}, "tools must be a list"),
        ({"tools": [{"type": "function"}]}, "each tool must be"),
        ({"tool_choice": "always"}, "tool_choice must be"),
        ({"tools": [], "tool_choice": "required"}, "`tools` must be set"),
        (
            {"tool_choice": {"type": "function", "function": {"name": "nope"}}},
            "Tool 'nope' has not been passed",
        ),
        (
            {"messages": [*ASK_WEATHER, {"role": "tool", "content": "x"}]},
            "Missing required parameter: 'messages[1].tool_call_id'",
        ),
        (
            # The Ollama shape: a past call's arguments as an object.
            {
                "messages": [
                    *ASK_WEATHER,
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "c",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": {}},
                            }
                        ],
                    },
                ]
            },
            "Invalid type for 'messages[1].tool_calls[0].function.arguments'",
        ),
    ],
)
def test_refused_with_400(
    client: httpx.Client, body: dict[str, Any], error: str
) -> None:
    body = {"model": THINKER, "messages": ASK_WEATHER, "tools": TOOLS, **body}
    response = client.post(PATH, json=body)
    assert response.status_code == 400
    assert error in response.json()["error"]["message"]


def test_the_answer_after_the_results_quotes_them(client: httpx.Client) -> None:
    events = stream(client, messages=openai_history())
    assert f"`get_weather` returned:\n\n> {RESULT}" in text(events)
    assert finish(events) == "stop"


def test_max_tokens_inside_a_call_stops_with_length(client: httpx.Client) -> None:
    events = stream(
        client, max_tokens=3, chat_template_kwargs={"enable_thinking": False}
    )
    assert len([d for d in deltas(events) if "tool_calls" in d]) == 3
    assert finish(events) == "length"


def test_scripted_malformed_arguments_and_an_unknown_tool_stream_as_written(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.tool_script = [
        [
            {"name": "get_weather", "arguments": '{"location": "Par', "id": "x1"},
            {"name": "no_such_tool", "arguments": {}},
        ]
    ]
    body = {"model": THINKER, "messages": ASK_WEATHER, "tools": TOOLS}
    calls = client.post(PATH, json=body).json()["choices"][0]["message"]["tool_calls"]
    assert [(c["id"], c["function"]) for c in calls] == [
        ("x1", {"name": "get_weather", "arguments": '{"location": "Par'}),
        (calls[1]["id"], {"name": "no_such_tool", "arguments": "{}"}),
    ]


# -- the official client -----------------------------------------------------------


def create(sim: SimulatorServer, **request: Any) -> Any:
    """`chat.completions.create` of an `openai` client of the simulator."""
    client = openai.OpenAI(base_url=f"{sim.url}/v1", api_key="none", max_retries=0)
    request = {"model": THINKER, "tools": TOOLS, **request}
    return client.chat.completions.create(**request)


def test_the_openai_client_reads_the_calls_streamed(sim: SimulatorServer) -> None:
    chunks = list(create(sim, messages=ASK_BOTH, stream=True))
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for part in (
            chunk.choices[0].delta.tool_calls if chunk.choices else None
        ) or []:
            call = calls.setdefault(part.index, {"name": "", "arguments": ""})
            call["name"] += part.function.name or ""
            call["arguments"] += part.function.arguments or ""
    assert [(c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
        ("everything__echo", {"message": "say hello world"}),
        ("get_weather", {"location": "Oslo", "unit": "celsius", "days": 1}),
    ]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_the_openai_client_sends_results_back_and_reads_the_answer(
    sim: SimulatorServer,
) -> None:
    message = create(sim, messages=ASK_WEATHER).choices[0].message
    [call] = message.tool_calls
    assert json.loads(call.function.arguments) == WEATHER_ARGS
    answer = create(
        sim,
        messages=[
            *ASK_WEATHER,
            message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": RESULT},
        ],
    )
    assert f"> {RESULT}" in answer.choices[0].message.content
    assert answer.choices[0].finish_reason == "stop"
    sent = sim.log[-1].body["messages"][1]["tool_calls"][0]
    assert sent["id"] == call.id and sent["function"]["name"] == "get_weather"


def test_a_cut_inside_the_arguments_ends_without_a_finish(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.cut_after = 4
    body = {"model": THINKER, "messages": ASK_WEATHER, "tools": TOOLS, "stream": True}
    body["chat_template_kwargs"] = {"enable_thinking": False}
    with (
        client.stream("POST", PATH, json=body) as response,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        response.read()
    entry = sim.log[-1]
    assert entry.fault == "cut" and entry.tokens_sent == 4 and not entry.finished
