"""A conversation as Markdown, for reading: its shown branch, each message
headed by who wrote it and when, thinking quoted before its answer."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from chat.models import Conversation, Message

SOURCES = {
    "open-webui": "Open WebUI",
    "chatgpt": "ChatGPT",
    "chatsite": "a chatsite export",
}


def shown_messages(conversation: Conversation) -> list[Message]:
    """The shown branch, from the export's prefetch when there is one."""
    every: list[Message] | None = getattr(conversation, "every_message", None)
    if every is None:
        return list(conversation.messages.order_by("pk"))
    return [m for m in every if not m.replaced]


def conversation_markdown(conversation: Conversation) -> str:
    lines = [f"# {_one_line(conversation.display_title)}", ""]
    profile = conversation.model_profile
    if profile is not None:
        lines.append(f"- Model: {profile.label}")
    lines.append(f"- Started: {_when(conversation.created_at)}")
    lines.append(f"- Last active: {_when(conversation.updated_at)}")
    if conversation.imported_from:
        source = SOURCES.get(conversation.imported_from, conversation.imported_from)
        lines.append(f"- Imported from {source}")
    for message in shown_messages(conversation):
        lines += ["", "---", "", _heading(message), ""]
        if message.thinking:
            lines += [_quoted("Thinking", message.thinking), ""]
        lines.append(message.content or "*(no text)*")
        if message.status not in (Message.Status.DONE, Message.Status.STREAMING):
            detail = message.error_detail or message.get_status_display().lower()
            lines += ["", f"*({_one_line(detail)})*"]
    return "\n".join(lines).rstrip() + "\n"


def _heading(message: Message) -> str:
    if message.role == Message.Role.USER:
        who = "You"
    else:
        who = f"Assistant ({message.model_tag})" if message.model_tag else "Assistant"
    return f"## {who} · {_when(message.created_at)}"


def _quoted(title: str, text: str) -> str:
    body = "\n".join(f"> {line}".rstrip() for line in text.splitlines())
    return f"> **{title}**\n>\n{body}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _when(moment: datetime) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M %Z")
