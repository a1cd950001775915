"""Messages as each dialect takes them: the internal (OpenAI) shape, with
pictures as Ollama takes them (`images`), made into OpenAI content parts or
switched with Qwen3's `/think`; a tool turn's calls and results made into
Ollama's form.
"""

from __future__ import annotations

import json
from typing import Any


def with_content_parts(message: dict[str, Any]) -> dict[str, Any]:
    """A message as OpenAI-compatible servers take it: one carrying images
    (base64, as Ollama takes them: `images`) becomes content parts, its text
    then each picture as a data URL."""
    images = message.get("images")
    if not images:
        return message
    parts: list[dict[str, Any]] = []
    if message.get("content"):
        parts.append({"type": "text", "text": message["content"]})
    parts += [
        {"type": "image_url", "image_url": {"url": data_url(image)}} for image in images
    ]
    converted = {k: v for k, v in message.items() if k != "images"}
    converted["content"] = parts
    return converted


def data_url(image: str) -> str:
    """A base64 picture as a data URL, its type read from its first bytes
    (the site sends PNG or JPEG only)."""
    kind = "image/png" if image.startswith("iVBOR") else "image/jpeg"
    return f"data:{kind};base64,{image}"


def soft_switched(messages: list[dict[str, Any]], think: bool) -> list[dict[str, Any]]:
    """Return `messages` with Qwen3's `/think` or `/no_think` after the last
    user message (the latest switch in a chat wins)."""
    switch = "/think" if think else "/no_think"
    result = list(messages)
    for index in range(len(result) - 1, -1, -1):
        if result[index].get("role") == "user":
            message = dict(result[index])
            message["content"] = f"{message.get('content', '')} {switch}".lstrip()
            result[index] = message
            return result
    return result


def ollama_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` in the internal (OpenAI) shape as Ollama's `/api/chat` takes
    them: an assistant's calls with their arguments as an object, and a tool's
    result naming its tool in `tool_name` (docs.ollama.com, "Tool calling").
    Messages of a turn without tools are returned as they are."""
    if not any(m.get("tool_calls") or m.get("role") == "tool" for m in messages):
        return messages
    return [_ollama_message(m) for m in messages]


def _ollama_message(message: dict[str, Any]) -> dict[str, Any]:
    if message.get("role") == "tool":
        converted = {k: v for k, v in message.items() if k != "name"}
        converted["tool_name"] = _text(message.get("name"))
        return converted
    calls = message.get("tool_calls")
    if not calls or not isinstance(calls, list):
        return message
    converted = dict(message)
    converted["content"] = _text(message.get("content"))
    converted["tool_calls"] = [
        _ollama_call(index, call)
        for index, call in enumerate(calls)
        if isinstance(call, dict)
    ]
    return converted


def _ollama_call(index: int, call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    arguments = function.get("arguments")
    return {
        "id": _text(call.get("id")),
        "type": "function",
        "function": {
            "index": index,
            "name": _text(function.get("name")),
            "arguments": _arguments_object(arguments),
        },
    }


def _arguments_object(value: object) -> dict[str, Any]:
    """The arguments of a past call as Ollama takes them: an object. Arguments
    that were not a JSON object (the engine told the model so) become `{}`:
    Ollama refuses the whole request otherwise."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return {}
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
