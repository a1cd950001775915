"""Notices shown in a conversation between messages (never sent to the model)."""

from __future__ import annotations

from django.db import models


class SettingsChange(models.Model):
    """A line in the conversation: "Settings changed: model → X, history → …"."""

    conversation = models.ForeignKey(
        "chat.Conversation", on_delete=models.CASCADE, related_name="settings_changes"
    )
    text = models.CharField(max_length=1000)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return self.text

    @property
    def dom_id(self) -> str:
        return f"settings-change-{self.pk}"
