"""Effective settings: a conversation's value, else its model's, else the site's,
with the level it came from (shown next to each setting)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from django.db import models
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from chat.models.profiles import HistoryPolicy

if TYPE_CHECKING:
    from chat.models.profiles import ModelProfile

T = TypeVar("T")


class Level(models.TextChoices):
    CONVERSATION = "conversation", _("set for this conversation")
    MODEL = "model", _("the model's default")
    SITE = "site", _("the site default")
    SERVER = "server", _("the model server's default")


@dataclass(frozen=True)
class Effective(Generic[T]):
    value: T
    level: Level


@dataclass(frozen=True)
class History:
    policy: str
    last_n: int

    def __str__(self) -> str:
        if self.policy == HistoryPolicy.LAST_N:
            return ngettext("last message", "last %(count)d messages", self.last_n) % {
                "count": self.last_n
            }
        if self.policy == HistoryPolicy.FIT:
            return gettext("fit the model's context")
        if self.policy == HistoryPolicy.NONE:
            return gettext("none")
        return gettext("all messages")


@dataclass(frozen=True)
class EffectiveSettings:
    """Everything the next answer will use, for the settings panel."""

    model: Effective[ModelProfile]
    thinking: Effective[bool | None]
    history: Effective[History]
    temperature: Effective[float | None]
    system_prompt: str
