"""Notices shown in a conversation between messages (never sent to the model)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import models
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

if TYPE_CHECKING:
    from chat.models.conversations import Conversation


class SettingsChange(models.Model):
    """A line in the conversation: "Settings changed: model → X, history → …"."""

    conversation = models.ForeignKey(
        "chat.Conversation",
        on_delete=models.CASCADE,
        related_name="settings_changes",
        verbose_name=gettext_lazy("conversation"),
    )
    role = "notice"  # tells it from a message in a conversation's timeline

    text = models.CharField(max_length=1000, verbose_name=gettext_lazy("text"))
    # The settings it names, so that changes made one after another, with no
    # message between them, read as one notice (`record`).
    changed = models.JSONField(
        default=list, blank=True, verbose_name=gettext_lazy("settings changed")
    )
    created_at = models.DateTimeField(
        auto_now_add=True, verbose_name=gettext_lazy("created at")
    )

    class Meta:
        verbose_name = gettext_lazy("settings change")
        verbose_name_plural = gettext_lazy("settings changes")
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return self.text

    @property
    def dom_id(self) -> str:
        return f"settings-change-{self.pk}"

    # Set by `record` when it rewrote the conversation's last notice.
    merged = False

    @classmethod
    def record(
        cls, conversation: Conversation, changed: Iterable[str]
    ) -> SettingsChange | None:
        """Note the settings that changed ("model", "thinking", "history",
        "temperature", "system prompt") with the values the next answer uses.
        The settings panel saves each change as it is made: when nothing was
        asked since the conversation's last notice, that notice is rewritten
        to name these too, rather than one notice per field."""
        changed = list(changed)
        if not changed:
            return None
        last = cls.objects.filter(conversation=conversation).last()
        if (
            last is not None
            and not conversation.messages.filter(
                created_at__gte=last.created_at
            ).exists()
        ):
            changed = [*last.changed, *(c for c in changed if c not in last.changed)]
        else:
            last = None
        try:
            effective = conversation.effective_settings()
        except conversation.NoModel:
            return None
        values = {
            "model": effective.model.value.label,
            "thinking": _thinking(effective.thinking.value, effective.thinking.level),
            "history": str(effective.history.value),
            "temperature": _("model default")
            if effective.temperature.value is None
            else f"{effective.temperature.value:g}",
            "system prompt": _("changed") if effective.system_prompt else _("none"),
        }
        # The notice is stored as text, in the language of whoever changed it
        # (the conversation's owner).
        names = {
            "model": _("model"),
            "thinking": _("thinking"),
            "history": _("history"),
            "temperature": _("temperature"),
            "system prompt": _("system prompt"),
        }
        parts = [
            f"{names[name]} → {values[name]}" for name in changed if name in values
        ]
        text = _("Settings changed: %(changes)s") % {"changes": ", ".join(parts)}
        if last is None:
            return cls.objects.create(
                conversation=conversation, text=text, changed=changed
            )
        last.text, last.changed, last.merged = text, changed, True
        last.save(update_fields=["text", "changed"])
        return last


def _thinking(value: bool | None, level: str) -> str:
    if value is None:
        return _("not supported")
    text = _("on") if value else _("off")
    if level == "model":
        return _("model default (%(value)s)") % {"value": text}
    return text
