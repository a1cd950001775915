"""Tool calling in each dialect: the `tools`, `tool_choice` and tool-turn
messages a request may carry (refused as each server refuses them), and the
shapes the calls go out in: Ollama's whole calls, vLLM's streamed
`delta.tool_calls`, Qwen3's inline `<tool_call>` tags."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from chat.simulator.config import SimModel
from chat.simulator.faults import ApiError
from chat.simulator.toolcalls.arguments import json_pieces
from chat.simulator.toolcalls.choosing import Call, Offer

CHOICES = ("auto", "none", "required")

# Ollama's names for JSON types in its decoding errors (Go's encoding/json).
_GO_KINDS = {str: "string", dict: "object", list: "array", bool: "bool"}


def _go_kind(value: Any) -> str:
    return _GO_KINDS.get(type(value), "number")


def _functions(
    tools: list[Any], refuse: Callable[[Any], NoReturn]
) -> tuple[dict[str, Any], ...]:
    functions: list[dict[str, Any]] = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            refuse(tool)
        functions.append(function)
    return tuple(functions)


# -- Ollama ------------------------------------------------------------------------


def ollama_offer(body: dict[str, Any], model: SimModel, name: str) -> Offer:
    """The tools of an `/api/chat` body; Ollama has no `tool_choice`."""
    tools = body.get("tools")
    if tools is None:
        return Offer()
    if not isinstance(tools, list):
        raise ApiError(
            400,
            f"json: cannot unmarshal {_go_kind(tools)} into Go struct field "
            "ChatRequest.tools of type api.Tools",
        )

    def refuse(tool: Any) -> NoReturn:
        raise ApiError(
            400,
            f"json: cannot unmarshal {_go_kind(tool)} into Go struct field "
            "ChatRequest.tools of type api.Tool",
        )

    offer = Offer(_functions(tools, refuse))
    if offer.tools and not model.calls_tools:
        raise ApiError(400, f'"{name}" does not support tools')
    return offer


def check_ollama_history(messages: Sequence[Any]) -> None:
    """Ollama reads a past call's arguments into an object: JSON text (the
    OpenAI shape) is refused, as its decoder refuses it."""
    for message in messages:
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            arguments = function.get("arguments") if isinstance(function, dict) else {}
            if not isinstance(arguments, dict):
                raise ApiError(
                    400,
                    f"json: cannot unmarshal {_go_kind(arguments)} into Go struct "
                    "field ToolCallFunction.messages.tool_calls.function.arguments "
                    "of type api.ToolCallFunctionArguments",
                )


def ollama_calls(calls: Sequence[Call]) -> list[tuple[int, Any]]:
    """What Ollama sends for each call, with the tokens the model spent
    writing it: a call its parser reads goes out whole once written,
    `(tokens, [{"id", "function": {"index", "name", "arguments": {...}}}])`;
    one it cannot read (arguments that are not a JSON object) is passed on as
    content, a token at a time: `(1, "text")`."""
    sent: list[tuple[int, Any]] = []
    for call in calls:
        pieces = inline_pieces([call])
        arguments = call.parsed()
        if arguments is None:
            sent += [(1, piece) for piece in pieces]
            continue
        function = {"index": call.index, "name": call.name, "arguments": arguments}
        whole = {"id": call.made_id("call_", 8), "function": function}
        sent.append((len(pieces), [whole]))
    return sent


# -- OpenAI-compatible -------------------------------------------------------------


def openai_offer(body: dict[str, Any]) -> Offer:
    """The tools and `tool_choice` of a `/v1/chat/completions` body."""
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise ApiError(400, "tools must be a list of function tools")

    def refuse(tool: Any) -> NoReturn:
        raise ApiError(
            400, 'each tool must be {"type": "function", "function": {"name": ...}}'
        )

    functions = _functions(tools or [], refuse)
    choice = body.get("tool_choice", "auto")
    if isinstance(choice, str) and choice in CHOICES:
        if choice == "required" and not functions:
            raise ApiError(400, "When using `tool_choice`, `tools` must be set.")
        return Offer(functions, choice)
    function = choice.get("function") if isinstance(choice, dict) else None
    named = function.get("name") if isinstance(function, dict) else None
    if not isinstance(named, str):
        raise ApiError(
            400,
            'tool_choice must be "none", "auto", "required" or '
            '{"type": "function", "function": {"name": ...}}',
        )
    if named not in {f["name"] for f in functions}:
        raise ApiError(400, f"Tool '{named}' has not been passed in `tools`.")
    return Offer(functions, "named", named)


def check_openai_history(messages: Sequence[Any]) -> None:
    """A tool result names its call; a past call's arguments are JSON text."""
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool" and not isinstance(
            message.get("tool_call_id"), str
        ):
            raise ApiError(
                400, f"Missing required parameter: 'messages[{i}].tool_call_id'."
            )
        calls = message.get("tool_calls")
        for j, call in enumerate(calls if isinstance(calls, list) else []):
            function = call.get("function") if isinstance(call, dict) else None
            arguments = function.get("arguments") if isinstance(function, dict) else ""
            if not isinstance(arguments, str):
                raise ApiError(
                    400,
                    f"Invalid type for 'messages[{i}].tool_calls[{j}].function."
                    "arguments': expected a string, but got an object instead.",
                )


def openai_calls(
    calls: Sequence[Call], tool_format: str
) -> tuple[list[tuple[str, Any]], str]:
    """The deltas of the calls, and the finish reason they give: a server
    with a tool parser says the reply asks for tools, one without (`tags`)
    saw only text."""
    if tool_format == "tags":
        return [("content", piece) for piece in inline_pieces(calls)], "stop"
    return _call_deltas(calls), "tool_calls"


def _call_deltas(calls: Sequence[Call]) -> list[tuple[str, Any]]:
    """vLLM's stream of the calls: each opens with its index, id, type, name
    and empty arguments, then its arguments a token at a time."""
    deltas: list[tuple[str, Any]] = []
    for call in calls:
        head = {
            "index": call.index,
            "id": call.made_id("chatcmpl-tool-", 32),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        deltas.append(("tool_calls", [head]))
        deltas += [
            ("tool_calls", [{"index": call.index, "function": {"arguments": piece}}])
            for piece in json_pieces(call.arguments)
        ]
    return deltas


def openai_message(deltas: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The message of a non-streamed answer: its deltas joined."""
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    calls: dict[int, dict[str, Any]] = {}
    for field, value in deltas:
        if field != "tool_calls":
            message[field] = message.get(field, "") + value
            continue
        for part in value:
            if "id" in part:
                calls[part["index"]] = {
                    "id": part["id"],
                    "type": "function",
                    "function": dict(part["function"]),
                }
            else:
                function = calls[part["index"]]["function"]
                function["arguments"] += part["function"]["arguments"]
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
        message["content"] = message["content"] or None
    return message


# -- inline (Qwen3's chat template) --------------------------------------------------


def inline_pieces(calls: Sequence[Call]) -> list[str]:
    """The calls as Qwen3 writes them, a token at a time (`<tool_call>` and
    `</tool_call>` are single tokens of its vocabulary)."""
    pieces: list[str] = []
    for call in calls:
        if pieces:
            pieces.append("\n")
        text = (
            f'{{"name": {json.dumps(call.name, ensure_ascii=False)}, '
            f'"arguments": {call.arguments}}}'
        )
        pieces += ["<tool_call>", "\n", *json_pieces(text), "\n", "</tool_call>"]
    return pieces
