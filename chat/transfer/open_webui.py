"""Open WebUI's "Export All Chats" (a JSON list of its chat objects; also one
chat, and the NDJSON its /api/v1/chats/all sends). Read from Open WebUI
0.12.4's own files: tests/transfer/samples/README.md says how they were made
and what they hold.

A chat keeps its messages as a tree (`chat.history.messages`, id → message
with `parentId`); the branch on screen ends at `chat.history.currentId`. That
branch is imported. Its flat `chat.messages` list is not used: Open WebUI
0.12.4 leaves it stale (the samples' README, "Surprises" 1).

Thinking is an item of type "reasoning" in an answer's `output` (0.12.4), or,
in older exports, a `<details type="reasoning">` block or `<think>` tags at the
start of its `content`."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _

from chat.transfer.incoming import (
    IncomingConversation,
    IncomingMessage,
    Summary,
    branch_to,
    finite,
    from_epoch,
    one_branch,
    storable,
)

SOURCE = "Open WebUI"

_REASONING_DETAILS = re.compile(
    r'<details\s+type="reasoning"[^>]*>\s*(?:<summary>.*?</summary>)?(.*?)</details>\s*',
    re.DOTALL,
)
_THINK_TAGS = re.compile(r"^\s*<think>(.*?)</think>\s*", re.DOTALL)


def conversation(item: Any, summary: Summary) -> IncomingConversation | None:
    chat = item.get("chat") if isinstance(item, dict) else None
    history = chat.get("history") if isinstance(chat, dict) else None
    tree = history.get("messages") if isinstance(history, dict) else None
    chat_id = item.get("id") if isinstance(item, dict) else None
    if not isinstance(tree, dict) or not isinstance(chat_id, str) or not chat_id:
        summary.warn(_("Chats without an id or a message history skipped"))
        return None
    assert isinstance(chat, dict) and isinstance(history, dict)
    now = summary.now
    created = from_epoch(item.get("created_at")) or from_epoch(chat.get("timestamp"))
    created = created or now
    messages = []
    branch = branch_to(
        tree,
        history.get("currentId"),
        "parentId",
        newest=lambda node: finite(node.get("timestamp")) or 0.0,
        summary=summary,
    )
    for node in branch:
        message = _message(node, created, summary)
        if message is not None:
            messages.append(message)
    messages = one_branch(messages, summary)
    if not messages:
        summary.warn(_("Chats without any message skipped"))
        return None
    updated = from_epoch(item.get("updated_at")) or messages[-1].created_at
    title = item.get("title") or chat.get("title")
    models = chat.get("models")
    params = chat.get("params") if isinstance(chat.get("params"), dict) else {}
    assert isinstance(params, dict)
    temperature, system = params.get("temperature"), params.get("system")
    return IncomingConversation(
        key=f"open-webui:{chat_id}",
        imported_from="open-webui",
        title=title if isinstance(title, str) else "",
        created_at=created,
        updated_at=max(updated, created),
        messages=messages,
        pinned_at=updated if item.get("pinned") is True else None,
        archived_at=updated if item.get("archived") is True else None,
        model=models[0] if isinstance(models, list) and models else None,
        system_prompt=system if isinstance(system, str) else "",
        temperature=finite(temperature) if storable(temperature, signed=True) else None,
    )


def _message(
    node: dict[str, Any], fallback: datetime, summary: Summary
) -> IncomingMessage | None:
    role = node.get("role")
    if role == "system":
        summary.warn(_("System messages skipped"))
        return None
    if role not in ("user", "assistant"):
        summary.warn(
            _("Messages with an unknown role skipped (%(role)s)")
            % {"role": str(role)[:40]}
        )
        return None
    content, thinking = _text_and_thinking(node)
    error = node.get("error")
    error_detail = ""
    if isinstance(error, dict):
        error_detail = str(error.get("content") or _("The answer failed."))
    elif isinstance(error, str) and error:
        error_detail = error
    if not content and not thinking and not error_detail:
        summary.warn(_("Empty messages skipped"))
        return None
    model = node.get("model")
    return IncomingMessage(
        role=role,
        content=content,
        thinking=thinking,
        created_at=from_epoch(node.get("timestamp")) or fallback,
        status="error" if error_detail else "done",
        error_code="imported_error" if error_detail else "",
        error_detail=error_detail,
        model_tag=model if role == "assistant" and isinstance(model, str) else "",
        figures=_figures(node.get("usage")) if role == "assistant" else {},
    )


def _text_and_thinking(node: dict[str, Any]) -> tuple[str, str]:
    content = _text(node.get("content"))
    output = node.get("output") if isinstance(node.get("output"), list) else []
    assert isinstance(output, list)
    thoughts = [
        _text(item.get("summary")) or _text(item.get("content"))
        for item in output
        if isinstance(item, dict) and item.get("type") == "reasoning"
    ]
    if not content:
        content = "\n\n".join(
            _text(item.get("content"))
            for item in output
            if isinstance(item, dict) and item.get("type") == "message"
        )
    # Older versions wrote the thinking into the content.
    for block in _REASONING_DETAILS.findall(content):
        thoughts.append(_unquote(block))
    content = _REASONING_DETAILS.sub("", content)
    tagged = _THINK_TAGS.match(content)
    if tagged:
        thoughts.append(tagged.group(1).strip())
        content = content[tagged.end() :]
    return content.strip(), "\n\n".join(t for t in thoughts if t)


def _text(value: Any) -> str:
    """Text from a string or a list of parts ({"type": "output_text" or
    "text", "text": ...}); other parts (images, files) are left out."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            part["text"]
            for part in value
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _unquote(block: str) -> str:
    """The thinking of a `<details type="reasoning">` block: its lines were
    quoted ("> ") for Markdown."""
    lines = [
        line.removeprefix(">").removeprefix(" ") for line in block.strip().splitlines()
    ]
    return "\n".join(lines).strip()


def _figures(usage: Any) -> dict[str, Any]:
    """An answer's figures from its `usage`: OpenAI's token counts and, from
    Ollama, its durations in nanoseconds."""
    if not isinstance(usage, dict):
        return {}

    def count(*names: str) -> int | None:
        for name in names:
            value = usage.get(name)
            if isinstance(value, int) and storable(value):
                return value
        return None

    def ms(name: str) -> float | None:
        value = finite(usage.get(name))
        return value / 1_000_000 if value and 0 < value < 2**31 * 1_000_000 else None

    return {
        "prompt_tokens": count("prompt_eval_count", "prompt_tokens", "input_tokens"),
        "output_tokens": count("eval_count", "completion_tokens", "output_tokens"),
        "prompt_eval_ms": ms("prompt_eval_duration"),
        "eval_ms": ms("eval_duration"),
        "load_ms": ms("load_duration"),
        "total_ms": ms("total_duration"),
    }
