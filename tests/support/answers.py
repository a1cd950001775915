"""Stored answers with given figures, for the throughput tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from chat.models import Message


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
