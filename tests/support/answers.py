"""Stored answers with given figures, for the throughput tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from chat.models import AuditEvent, Message


def answer(
    conversation: Any, *, ago: timedelta = timedelta(hours=1), **fields: Any
) -> Message:
    """An assistant message of `conversation` created `ago` before now."""
    message = Message.objects.create(
        conversation=conversation, role=Message.Role.ASSISTANT, **fields
    )
    message.created_at = timezone.now() - ago
    Message.objects.filter(pk=message.pk).update(created_at=message.created_at)
    return message


def tool_answer(
    conversation: Any,
    calls: list[dict[str, Any]],
    *,
    ago: timedelta = timedelta(hours=1),
    **fields: Any,
) -> Message:
    """An answer with tools as the engine stores it
    (`chat.live.engine.turn.tools`): a tool step per call in `steps`, its
    calls' time in `tool_ms`, one model call more than its rounds (`rounds`,
    default 1), and an audit event per call. Each call: `source`, `tool`,
    `ms`, and `name` (default the tool), `outcome` ("ok" or an error's code,
    default "ok"), `size` (default 0)."""
    rounds = fields.pop("rounds", 1)
    steps = [
        {
            "kind": "tool",
            "id": f"call_{i}",
            "name": call.get("name", call["tool"]),
            "title": call["tool"].title(),
            "source": call["source"],
            "arguments": "{}",
            "ok": call.get("outcome", "ok") == "ok",
            "preview": "",
            "text": "",
            "size": call.get("size", 0),
            "cut": False,
            "ms": call["ms"],
            "error": None if call.get("outcome", "ok") == "ok" else call["outcome"],
            "citations": [],
        }
        for i, call in enumerate(calls)
    ]
    message = answer(
        conversation,
        ago=ago,
        steps=steps,
        model_calls=rounds + 1,
        tool_ms=sum(call["ms"] for call in calls),
        **fields,
    )
    owner = conversation.owner
    for step, call in zip(steps, calls, strict=True):
        event = AuditEvent.record(
            AuditEvent.Kind.TOOL_CALL,
            actor=owner,
            subject=owner,
            message_id=message.pk,
            source=call["source"],
            tool=call["tool"],
            name=step["name"],
            arguments_sha256="0" * 64,
            ms=call["ms"],
            size=step["size"],
            outcome=call.get("outcome", "ok"),
        )
        # Written as the answer ran.
        AuditEvent.objects.filter(pk=event.pk).update(at=message.created_at)
    return message
