"""A client's own tools in a chat request, in either dialect: the tools it
offers the model (`tools`, the function form), OpenAI's `tool_choice` and
`parallel_tool_calls`, and the calls and results of its history (an
assistant's `tool_calls`, `tool` messages), read into the OpenAI shape the
model-server clients take (`chat.upstream`): an assistant's calls as
`{"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}}`,
a result as `{"role": "tool", "tool_call_id", "name", "content"}`.

The client runs its tools itself: the site offers them to the model and
gives back the calls the model writes (`turn_rows.ClientTools`). Each
refusal is a 400 that says what is wrong."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from chat.api.errors import bad_request
from chat.models import ClientTools

Dialect = Literal["openai", "ollama"]

# The model servers' rule for a function's name (OpenAI's, which vLLM and
# llama.cpp follow).
NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
# OpenAI's own limit on the tools of one request.
MAX_TOOLS = 128
# The tools' JSON text: sent with every request, read as part of the prompt.
MAX_TOOLS_CHARS = 200_000
# An id or a name of a call in the history (the model wrote it: not checked
# against NAME, but bounded).
MAX_ID_CHARS = 200
CHOICES = ("auto", "none", "required")
PARAMETERS_SHAPE = 'a JSON Schema object ({"type": "object", ...})'


def offered(data: dict[str, Any], dialect: Dialect) -> ClientTools | None:
    """The tools a request offers the model, with OpenAI's `tool_choice` and
    `parallel_tool_calls` (Ollama has neither); None when it offers none or
    chose "none" (the model is then not told of them, on either kind of model
    server)."""
    if data.get("functions") is not None or data.get("function_call") is not None:
        raise bad_request(
            "The legacy functions and function_call fields are not supported: "
            "use tools and tool_choice.",
            "functions",
        )
    tools = _tools(data.get("tools"), dialect)
    parallel = data.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise bad_request(
            "parallel_tool_calls must be true or false.", "parallel_tool_calls"
        )
    choice = _choice(data.get("tool_choice"), tools) if dialect == "openai" else None
    if not tools or choice == "none":
        return None
    return ClientTools(
        tools, None if choice == "auto" else choice, parallel is not False
    )


def _tools(value: Any, dialect: Dialect) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad_request("tools must be a list of tools.", "tools")
    if len(value) > MAX_TOOLS:
        raise bad_request(
            f"tools has {len(value)} tools; the limit is {MAX_TOOLS}.", "tools"
        )
    tools = [_tool(item, f"tools[{i}]", dialect) for i, item in enumerate(value)]
    names = [tool["function"]["name"] for tool in tools]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise bad_request(f'tools[{i}]: two tools are named "{name}".', "tools")
    size = len(json.dumps(tools, ensure_ascii=False))
    if size > MAX_TOOLS_CHARS:
        raise bad_request(
            f"tools is {size:,} characters of JSON; the limit is {MAX_TOOLS_CHARS:,}.",
            "tools",
        )
    return tools


def _tool(item: Any, where: str, dialect: Dialect) -> dict[str, Any]:
    """One tool in the function form, with only what the model servers take."""
    if not isinstance(item, dict):
        raise bad_request(f"{where} must be an object.", "tools")
    kind = item.get("type")
    if kind != "function" and not (kind is None and dialect == "ollama"):
        raise bad_request(
            f'{where}.type must be "function": only function tools are supported.',
            "tools",
        )
    function = item.get("function")
    if not isinstance(function, dict):
        raise bad_request(f"{where}.function must be an object.", "tools")
    name = function.get("name")
    if not isinstance(name, str) or NAME.fullmatch(name) is None:
        raise bad_request(
            f"{where}.function.name must be 1 to 64 letters, digits, underscores "
            "or hyphens.",
            "tools",
        )
    description = function.get("description")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise bad_request(f"{where}.function.description must be a string.", "tools")
    parameters = function.get("parameters")
    if parameters is None:  # OpenAI's: a function that takes nothing
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
        raise bad_request(
            f"{where}.function.parameters must be {PARAMETERS_SHAPE}.", "tools"
        )
    out: dict[str, Any] = {
        "name": name,
        "description": description,
        "parameters": parameters,
    }
    strict = function.get("strict")
    if isinstance(strict, bool):
        out["strict"] = strict
    return {"type": "function", "function": out}


def _choice(value: Any, tools: list[dict[str, Any]]) -> str | dict[str, Any] | None:
    """OpenAI's `tool_choice`: "auto", "none", "required" or one function."""
    if value is None or value in ("auto", "none"):
        return value  # type: ignore[no-any-return]
    if value == "required":
        name = None
    elif (
        isinstance(value, dict)
        and value.get("type") == "function"
        and isinstance(value.get("function"), dict)
        and isinstance(value["function"].get("name"), str)
    ):
        name = value["function"]["name"]
    else:
        raise bad_request(
            'tool_choice must be "auto", "none", "required" or {"type": '
            '"function", "function": {"name": ...}}.',
            "tool_choice",
        )
    if not tools:
        raise bad_request(
            "tool_choice asks for a tool call, but the request offers no tools.",
            "tool_choice",
        )
    if name is None:
        return "required"
    if name not in [tool["function"]["name"] for tool in tools]:
        raise bad_request(
            f'tool_choice names the function "{name}", which is not among the tools.',
            "tool_choice",
        )
    return {"type": "function", "function": {"name": name}}


class History:
    """The calls of a request's history that no `tool` message answered yet,
    to tie each result to its call."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.open: list[tuple[str, str]] = []  # (id, name), in the order called

    def calls(self, value: Any, position: int) -> list[dict[str, Any]]:
        """The `tool_calls` of the assistant message at `position`, in the
        OpenAI shape."""
        where = f"messages[{position}]"
        if not isinstance(value, list) or len(value) > MAX_TOOLS:
            raise bad_request(
                f"{where}.tool_calls must be a list of at most {MAX_TOOLS} calls.",
                "messages",
            )
        calls = []
        for index, item in enumerate(value):
            at = f"{where}.tool_calls[{index}]"
            function = item.get("function") if isinstance(item, dict) else None
            if not isinstance(function, dict):
                raise bad_request(f"{at}.function must be an object.", "messages")
            call_id = item.get("id")
            if call_id is None and self.dialect == "ollama":
                # Ollama's clients send no ids: each result names its tool.
                call_id = f"call_{position}_{index}"
            name = _text(function.get("name"), f"{at}.function.name")
            call_id = _text(call_id, f"{at}.id")
            arguments = _arguments(function.get("arguments"), at, self.dialect)
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            )
            self.open.append((call_id, name))
        return calls

    def result(self, item: dict[str, Any], where: str) -> tuple[str, str]:
        """The (call id, tool name) a `tool` message answers: OpenAI's by its
        `tool_call_id`; Ollama's by its `tool_name` (or id), else the first
        call still open."""
        call_id = item.get("tool_call_id")
        if self.dialect == "openai" or call_id is not None:
            call_id = _text(call_id, f"{where}.tool_call_id")
            found = [call for call in self.open if call[0] == call_id]
            if not found:
                raise bad_request(
                    f'{where} answers the tool call "{call_id}", which no earlier '
                    "assistant message made (or another message answered).",
                    "messages",
                )
        else:
            name = item.get("tool_name")
            if name is not None:
                name = _text(name, f"{where}.tool_name")
            found = [call for call in self.open if name in (None, call[1])]
            if not found:
                raise bad_request(
                    f"{where} is a tool's result, but no earlier assistant "
                    + (
                        f'message called "{name}".'
                        if name
                        else "message called a tool."
                    ),
                    "messages",
                )
        self.open.remove(found[0])
        return found[0]


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        raise bad_request(
            f"{where} must be a string of 1 to {MAX_ID_CHARS} characters.", "messages"
        )
    if "\x00" in value:
        raise bad_request(f"{where} contains a NUL character.", "messages")
    return value


def _arguments(value: Any, where: str, dialect: Dialect) -> str:
    """A call's arguments as JSON text: OpenAI's are that text (as the model
    wrote it, valid or not), Ollama's an object."""
    if isinstance(value, str):
        return value
    if value is None:
        return "{}"
    if dialect == "ollama" and isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    kind = "a JSON object" if dialect == "ollama" else "a string of JSON text"
    raise bad_request(f"{where}.function.arguments must be {kind}.", "messages")
