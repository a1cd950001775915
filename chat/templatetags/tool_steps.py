"""An answer's steps as its page shows them (templates/chat/_message.html),
the same parts the live frames build (static/chat/tool_steps.js): the thoughts
before the first tool call in the answer's thinking block; then each tool call
and each later round's thoughts, in order; the answer's text (all of
`Message.content`) after them; the links the tools cited under it, numbered,
each once.

Read from `Message.steps` (docs/tools.md), which comes from the model and the
tools: every field is checked for its type here, and an answer without tool
steps is its thinking alone, as before tools."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django import template
from django.utils.formats import number_format

from chat.models import Message

register = template.Library()

# Arguments longer than this are shown as the model wrote them: pretty-printing
# parses them, on the request's thread.
PRETTY_MAX_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class ShownTool:
    id: str
    name: str
    title: str
    source: str
    arguments: str
    # "done", "error", or "unfinished" (a stored answer ended or is checkpointed
    # before the run's result).
    state: str
    preview: str
    size: int | None
    cut: bool
    ms: float | None
    error: str
    kind: str = "tool"


@dataclass(frozen=True, slots=True)
class ShownThinking:
    text: str
    kind: str = "thinking"


@dataclass(frozen=True, slots=True)
class ShownSteps:
    thinking: str  # the answer's first thinking block
    steps: list[ShownTool | ShownThinking] = field(default_factory=list)
    citations: list[dict[str, str]] = field(default_factory=list)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def pretty_arguments(arguments: str) -> str:
    """The call's JSON indented, or as written when it is not JSON (the model
    wrote it: a malformed call is shown as it was)."""
    if len(arguments) > PRETTY_MAX_CHARS:
        return arguments
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


def safe_link(url: object) -> str:
    """`url` if it is a web address, else "" (a `javascript:` link from a page
    the tool read must never become a link on ours)."""
    if not isinstance(url, str) or len(url) > 2048:
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    return url if parts.scheme in ("http", "https") and parts.netloc else ""


def _tool(step: dict[str, Any], cited: dict[str, str]) -> ShownTool:
    ok = step.get("ok")
    error = _text(step.get("error"))
    state = "unfinished" if ok is None and not error else ("done" if ok else "error")
    citations = step.get("citations")
    for citation in citations if isinstance(citations, list) else ():
        if isinstance(citation, dict) and (url := safe_link(citation.get("url"))):
            cited.setdefault(url, _text(citation.get("title")) or url)
    size = _number(step.get("size"))
    return ShownTool(
        id=_text(step.get("id")),
        name=_text(step.get("name")),
        title=_text(step.get("title")) or _text(step.get("name")),
        source=_text(step.get("source")),
        arguments=pretty_arguments(_text(step.get("arguments"))),
        state=state,
        preview=_text(step.get("preview")),
        size=None if size is None else int(size),
        cut=step.get("cut") is True,
        ms=_number(step.get("ms")),
        error=error,
    )


def steps_of(message: Message) -> ShownSteps:
    # getattr: the field came with the tools (0023); an object without it
    # (an export's, a test's) is an answer without steps.
    raw = getattr(message, "steps", None)
    steps = (
        [step for step in raw if isinstance(step, dict)]
        if isinstance(raw, list)
        else []
    )
    if not any(step.get("kind") == "tool" for step in steps):
        return ShownSteps(thinking=message.thinking)
    first: list[str] = []
    shown: list[ShownTool | ShownThinking] = []
    cited: dict[str, str] = {}
    for step in steps:
        kind = step.get("kind")
        if kind == "tool":
            shown.append(_tool(step, cited))
        elif kind == "thinking" and (text := _text(step.get("text"))):
            if not shown:
                first.append(text)
            elif isinstance(last := shown[-1], ShownThinking):
                shown[-1] = ShownThinking(last.text + text)
            else:
                shown.append(ShownThinking(text))
    citations = [{"url": url, "title": title} for url, title in cited.items()]
    return ShownSteps(thinking="".join(first), steps=shown, citations=citations)


@register.filter
def shown_steps(message: Message) -> ShownSteps:
    return steps_of(message)


@register.filter
def grouped(count: int) -> str:
    """A count with the language's digit grouping, as the page's script shows
    it (static/chat/i18n.js `number`)."""
    return number_format(count, force_grouping=True)
