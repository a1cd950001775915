"""A tool offered to the model and a tool turn's history in the internal
(OpenAI) shape, for the clients' tool tests (tests/upstream/ollama/ and
tests/upstream/openai/ test_tool_calls.py)."""

from __future__ import annotations

from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def _call(id: str, arguments: str) -> dict[str, Any]:
    function = {"name": "get_weather", "arguments": arguments}
    return {"id": id, "type": "function", "function": function}


def _result(id: str, content: str) -> dict[str, Any]:
    return {
        "role": "tool",
        "tool_call_id": id,
        "name": "get_weather",
        "content": content,
    }


# Two calls, the second's arguments not JSON (the engine told the model so).
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris and Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [_call("call_1", '{"city": "Paris"}'), _call("call_2", "{city")],
    },
    _result("call_1", "9C"),
    _result("call_2", "The arguments are not JSON."),
]
