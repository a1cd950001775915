"""Notices shown in a conversation between messages (never sent to the model)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import models

if TYPE_CHECKING:
    from chat.models.conversations import Conversation


class SettingsChange(models.Model):
    """A line in the conversation: "Settings changed: model → X, history → …"."""

    conversation = models.ForeignKey(
        "chat.Conversation", on_delete=models.CASCADE, related_name="settings_changes"
    )
    role = "notice"  # tells it from a message in a conversation's timeline

    text = models.CharField(max_length=1000)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return self.text

    @property
    def dom_id(self) -> str:
        return f"settings-change-{self.pk}"

    @classmethod
    def record(
        cls, conversation: Conversation, changed: Iterable[str]
    ) -> SettingsChange | None:
        """Note the settings that changed ("model", "thinking", "history",
        "temperature", "system prompt") with the values the next answer uses."""
        changed = list(changed)
        if not changed:
            return None
        try:
            effective = conversation.effective_settings()
        except conversation.NoModel:
            return None
        values = {
            "model": effective.model.value.label,
            "thinking": _thinking(effective.thinking.value, effective.thinking.level),
            "history": str(effective.history.value),
            "temperature": "model default"
            if effective.temperature.value is None
            else f"{effective.temperature.value:g}",
            "system prompt": "changed" if effective.system_prompt else "none",
        }
        parts = [f"{name} → {values[name]}" for name in changed if name in values]
        return cls.objects.create(
            conversation=conversation, text="Settings changed: " + ", ".join(parts)
        )


def _thinking(value: bool | None, level: str) -> str:
    if value is None:
        return "not supported"
    text = "on" if value else "off"
    return f"model default ({text})" if level == "model" else text
