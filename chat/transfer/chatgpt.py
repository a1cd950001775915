"""ChatGPT's data export: `conversations.json` (alone or in the export's ZIP),
a list of conversations, each a tree of nodes in `mapping` (id → {id,
message, parent, children}) whose branch on screen ends at `current_node`.
That branch is imported, followed from `current_node` up to the root.

What is not a question or an answer in plain text is left out and counted:
system and tool messages, an answer's calls to a tool (`recipient` other than
"all"), hidden messages (custom instructions), images and files. An answer's
reasoning (`content_type` "thoughts", o-series models) becomes the thinking of
the answer that follows it. Structure: tests/transfer/samples/chatgpt-README.md."""

from __future__ import annotations

import hashlib
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
)

SOURCE = "ChatGPT"
# Parts of a conversation's tree that are not shown to the reader as text:
# left out without a warning.
_SILENT = {"user_editable_context", "reasoning_recap", "model_editable_context"}


def conversation(item: Any, summary: Summary) -> IncomingConversation | None:
    mapping = item.get("mapping") if isinstance(item, dict) else None
    if not isinstance(mapping, dict):
        summary.warn(_("Conversations without a message tree skipped"))
        return None
    assert isinstance(item, dict)
    created = from_epoch(item.get("create_time")) or summary.now
    messages: list[IncomingMessage] = []
    thoughts: list[str] = []
    branch = branch_to(
        mapping,
        item.get("current_node"),
        "parent",
        newest=_created,
        summary=summary,
    )
    for node in branch:
        message = _message(node.get("message"), created, thoughts, summary)
        if message is not None:
            messages.append(message)
    messages = one_branch(messages, summary)
    if not messages:
        summary.warn(_("Conversations without any text message skipped"))
        return None
    updated = from_epoch(item.get("update_time")) or messages[-1].created_at
    title = item.get("title")
    model = item.get("default_model_slug")
    return IncomingConversation(
        key=f"chatgpt:{_id(item)}",
        imported_from="chatgpt",
        title=title if isinstance(title, str) else "",
        created_at=created,
        updated_at=max(updated, created),
        messages=messages,
        archived_at=updated if item.get("is_archived") is True else None,
        model=model if isinstance(model, str) else None,
    )


def _id(item: dict[str, Any]) -> str:
    for name in ("conversation_id", "id"):
        value = item.get(name)
        if isinstance(value, str) and value:
            return value[:180]
    # Older exports had no id: the tree's node ids identify it as well.
    nodes = ",".join(sorted(str(k) for k in item["mapping"]))
    return "tree-" + hashlib.sha256(nodes.encode()).hexdigest()[:32]


def _message(
    message: Any, fallback: Any, thoughts: list[str], summary: Summary
) -> IncomingMessage | None:
    if not isinstance(message, dict):
        return None  # the tree's root has none
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    content = message.get("content")
    content = content if isinstance(content, dict) else {}
    kind = content.get("content_type")
    metadata = message.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    if metadata.get("is_visually_hidden_from_conversation") or kind in _SILENT:
        return None
    if role == "system":
        if _parts_text(content):
            summary.warn(_("System messages skipped"))
        return None
    if role == "tool":
        summary.warn(_("Tool messages skipped"))
        return None
    if role not in ("user", "assistant"):
        summary.warn(
            _("Messages with an unknown role skipped (%(role)s)")
            % {"role": str(role)[:40]}
        )
        return None
    if kind == "thoughts":
        thoughts.extend(_thoughts(content))
        return None
    recipient = message.get("recipient")
    if role == "assistant" and recipient not in (None, "all"):
        summary.warn(_("Calls to tools skipped"))
        return None
    if kind == "code":
        text = content.get("text")
        text = f"```\n{text}\n```" if isinstance(text, str) and text else ""
    elif kind in ("text", "multimodal_text"):
        text = _parts_text(content, summary)
    else:
        summary.warn(
            _("Parts that are not text skipped (%(kind)s)") % {"kind": str(kind)[:40]}
        )
        return None
    if not text.strip():
        return None
    thinking = ""
    if role == "assistant":
        thinking = "\n\n".join(thoughts)
        thoughts.clear()
    model = metadata.get("model_slug")
    return IncomingMessage(
        role=role,
        content=text,
        thinking=thinking,
        created_at=from_epoch(message.get("create_time")) or fallback,
        model_tag=model if role == "assistant" and isinstance(model, str) else "",
    )


def _parts_text(content: dict[str, Any], summary: Summary | None = None) -> str:
    parts = content.get("parts")
    if not isinstance(parts, list):
        return ""
    texts = [p for p in parts if isinstance(p, str)]
    if summary is not None:
        summary.warn(_("Images and files left out"), len(parts) - len(texts))
    return "\n".join(t for t in texts if t)


def _thoughts(content: dict[str, Any]) -> list[str]:
    thoughts = content.get("thoughts")
    if not isinstance(thoughts, list):
        return []
    texts = []
    for thought in thoughts:
        if isinstance(thought, dict):
            parts = [thought.get("summary"), thought.get("content")]
            texts.append("\n\n".join(p for p in parts if isinstance(p, str) and p))
    return [t for t in texts if t]


def _created(node: dict[str, Any]) -> float:
    message = node.get("message")
    created = message.get("create_time") if isinstance(message, dict) else None
    return finite(created) or 0.0
