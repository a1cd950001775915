"""Which tools a reply calls and what the model says around the calls: the
rule, the script and `tool_choice` (the package's docstring), the thinking
before the calls, and the answer written from the tools' results."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chat.simulator.config import SimulatorConfig
from chat.simulator.received import text_of
from chat.simulator.script import Script, last_user_text, reply_script, split_tokens
from chat.simulator.toolcalls.arguments import arguments_for, mention_of

# How much of each tool result the answer quotes.
QUOTE_CHARS = 600


@dataclass(frozen=True)
class Offer:
    """The tools a request offers (their `function` objects) and its
    `tool_choice`: "auto", "none", "required", or `named` (a function)."""

    tools: tuple[dict[str, Any], ...] = ()
    choice: str = "auto"
    named: str | None = None


@dataclass(frozen=True)
class Call:
    """One call a reply writes. `arguments` is its JSON text as the model
    writes it (a script may make it malformed); `id` the script's, or empty
    (each dialect makes one from `key`)."""

    index: int
    name: str
    arguments: str
    id: str = ""
    key: str = ""

    def parsed(self) -> dict[str, Any] | None:
        """The arguments as an object, or None when they are not one."""
        try:
            value = json.loads(self.arguments)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def made_id(self, prefix: str, length: int) -> str:
        if self.id:
            return self.id
        return prefix + hashlib.sha256(self.key.encode()).hexdigest()[:length]


@dataclass(frozen=True)
class Turn:
    """A reply: thinking and content tokens, then the calls (maybe none)."""

    script: Script
    calls: tuple[Call, ...] = ()


def plan_turn(
    config: SimulatorConfig, messages: Sequence[Any], offer: Offer, *, think: bool
) -> Turn:
    """The reply to `messages`: calls (the script's, `tool_choice`'s or the
    rule's), an answer from the results the last calls got, or the usual
    answer (`reply_script`)."""
    question = last_user_text(messages)
    rounds = _rounds_since(messages)
    calls = _choose(config, offer, question, rounds)
    if calls:
        key = f"{config.seed}\x00{question}\x00{rounds}"
        made = tuple(
            Call(i, name, arguments, call_id, f"{key}\x00{i}")
            for i, (name, arguments, call_id) in enumerate(calls)
        )
        thinking = config.thinking_text or _calls_thinking(made)
        return Turn(Script.of(split_tokens(thinking) if think else (), ()), made)
    results = _results(messages) if rounds else []
    if results and config.answer_text is None:
        thinking = config.thinking_text or _results_thinking(results)
        content = _results_answer(results)
        return Turn(Script.of(split_tokens(thinking) if think else (), content))
    return Turn(reply_script(config, messages, think=think))


def _choose(
    config: SimulatorConfig, offer: Offer, question: str, rounds: int
) -> list[tuple[str, str, str]]:
    """(name, arguments JSON text, id) of each call the reply makes."""
    if not offer.tools or offer.choice == "none":
        return []
    script = config.tool_script
    if script is not None:
        if rounds < len(script):
            return [_scripted(call) for call in script[rounds]]
        if config.tool_loop and script:
            return [_scripted(call) for call in script[-1]]
        return []
    by_name = {str(tool.get("name")): tool for tool in offer.tools}
    if offer.named is not None:
        chosen = [by_name[offer.named]] if offer.named in by_name else []
    else:
        chosen = _mentioned(offer.tools, question) if rounds == 0 else []
        if not chosen and offer.choice == "required":
            chosen = _mentioned(offer.tools, question) or [offer.tools[0]]
    return [_generated(tool, question, chosen) for tool in chosen]


def _scripted(call: dict[str, Any]) -> tuple[str, str, str]:
    arguments = call.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return str(call["name"]), arguments, str(call.get("id", ""))


def _generated(
    tool: dict[str, Any], question: str, chosen: Sequence[dict[str, Any]]
) -> tuple[str, str, str]:
    name = str(tool.get("name"))
    others = [
        mention
        for other in chosen
        if other is not tool
        for mention in _mentions_of(str(other.get("name")))
    ]
    parameters = tool.get("parameters")
    values = arguments_for(parameters, question, _mentions_of(name), others)
    return name, json.dumps(values, ensure_ascii=False), ""


def _mentions_of(name: str) -> list[str]:
    """How a question may name a tool: its full name, and for a name made of a
    server's and a tool's (`everything__echo`), the tool's own (`echo`)."""
    short = name.rsplit("__", 1)[-1]
    return [name, short] if short and short != name else [name]


def _mentioned(tools: Sequence[dict[str, Any]], question: str) -> list[dict[str, Any]]:
    """The tools the question names as whole words, in the order it names them."""
    found: list[tuple[int, int, dict[str, Any]]] = []
    for order, tool in enumerate(tools):
        match = mention_of(_mentions_of(str(tool.get("name")))).search(question)
        if match:
            found.append((match.start(), order, tool))
    return [tool for _, _, tool in sorted(found, key=lambda f: f[:2])]


def _has_calls(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return False
    return bool(message.get("tool_calls")) or "<tool_call>" in text_of(
        message.get("content")
    )


def _after_question(messages: Sequence[Any]) -> list[Any]:
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if isinstance(message, dict) and message.get("role") == "user":
            return list(messages[i + 1 :])
    return list(messages)


def _rounds_since(messages: Sequence[Any]) -> int:
    """How many replies with calls came since the last user message."""
    return sum(1 for message in _after_question(messages) if _has_calls(message))


def _results(messages: Sequence[Any]) -> list[tuple[str, str]]:
    """(tool name, result text) of each result after the last calls."""
    after = _after_question(messages)
    last = max(i for i, message in enumerate(after) if _has_calls(message))
    names: dict[str, str] = {}
    for call in after[last].get("tool_calls") or []:
        if isinstance(call, dict) and isinstance(call.get("function"), dict):
            names[str(call.get("id"))] = str(call["function"].get("name"))
    results = []
    for message in after[last + 1 :]:
        if isinstance(message, dict) and message.get("role") == "tool":
            name = (
                message.get("tool_name")
                or message.get("name")
                or names.get(str(message.get("tool_call_id")))
                or "the tool"
            )
            results.append((str(name), text_of(message.get("content"))))
    return results


def _calls_thinking(calls: Sequence[Call]) -> str:
    names = " and ".join(dict.fromkeys(f"`{call.name}`" for call in calls))
    first = calls[0]
    return (
        f"The user wants me to use {names}. "
        f"I'll call `{first.name}` with {first.arguments}, "
        "then answer from what it returns."
    )


def _results_thinking(results: Sequence[tuple[str, str]]) -> str:
    name, text = results[0]
    return (
        f"The tool `{name}` returned {len(text)} characters. "
        "I'll answer from its result and quote it."
    )


def _results_answer(results: Sequence[tuple[str, str]]) -> list[str]:
    blocks = []
    for name, text in results:
        quoted = text.strip() or "(nothing)"
        if len(quoted) > QUOTE_CHARS:
            quoted = quoted[:QUOTE_CHARS].rstrip() + " …"
        lines = "\n".join(f"> {line}".rstrip() for line in quoted.splitlines())
        blocks.append(f"Here is what `{name}` returned:\n\n{lines}")
    blocks.append("That is the answer, from the tool's result.")
    return split_tokens("\n\n".join(blocks))
