"""The chat app's models, one module per subject."""

from __future__ import annotations

from chat.models.conversations import Conversation, Turn
from chat.models.messages import Message, MessageQuerySet
from chat.models.profiles import (
    HistoryPolicy,
    ModelProfile,
    ModelProfileQuerySet,
    ThinkingMode,
    ThinkingSwitch,
    ThinkTags,
)
from chat.models.site import SiteDefaults

__all__ = [
    "Conversation",
    "HistoryPolicy",
    "Message",
    "MessageQuerySet",
    "ModelProfile",
    "ModelProfileQuerySet",
    "SiteDefaults",
    "ThinkingMode",
    "ThinkingSwitch",
    "ThinkTags",
    "Turn",
]
