"""The tools the simulator's tool-calling tests offer, and the questions that
name them."""

from __future__ import annotations

from typing import Any

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather at a place",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "a city"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1},
            },
            "required": ["location", "unit", "days"],
        },
    },
}
ECHO: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "everything__echo",
        "description": "Echoes back the input",
        "parameters": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    },
}
TOOLS = [WEATHER, ECHO]
ASK_WEATHER = [
    {"role": "user", "content": "Use get_weather: how warm is it in Paris for 3 days?"}
]
WEATHER_ARGS = {"location": "Paris", "unit": "celsius", "days": 3}
ASK_BOTH = [
    {"role": "user", "content": "Use echo to say hello world, then get_weather in Oslo"}
]
RESULT = "Sunny, 21 °C; light wind from the west <b>not markup</b>"


def openai_history(call_id: str = "chatcmpl-tool-1") -> list[dict[str, Any]]:
    """The weather question, the model's call, and the tool's result (OpenAI)."""
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'},
    }
    return [
        *ASK_WEATHER,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": RESULT},
    ]


def ollama_history() -> list[dict[str, Any]]:
    """The same turn in Ollama's shapes (arguments an object, `tool_name`)."""
    call = {"function": {"name": "get_weather", "arguments": {"location": "Paris"}}}
    return [
        *ASK_WEATHER,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_name": "get_weather", "content": RESULT},
    ]
