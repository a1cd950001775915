"""The chat app's models, one module per subject."""

from __future__ import annotations

from chat.models.conversations import Conversation, Turn
from chat.models.messages import Message, MessageQuerySet
from chat.models.profiles import ModelProfile, ModelProfileQuerySet, ThinkingMode

__all__ = [
    "Conversation",
    "Message",
    "MessageQuerySet",
    "ModelProfile",
    "ModelProfileQuerySet",
    "ThinkingMode",
    "Turn",
]
