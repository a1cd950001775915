"""Admission tickets: one per answer, queued or holding a model slot."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy

from chat.models.messages import Message
from chat.models.profiles import ModelProfile


class Ticket(models.Model):
    """An answer's place at its model: waiting, or admitted (holding a slot).

    An admitted ticket holds a slot while its answer is streaming: an answer its
    process left behind when it died is marked interrupted by the orphan sweep,
    which gives the slot back without anyone touching the ticket. Finished
    answers' tickets are kept for a while: they say who was served last (see
    `chat.live.admission`).
    """

    message = models.OneToOneField(
        Message,
        on_delete=models.CASCADE,
        related_name="ticket",
        verbose_name=gettext_lazy("message"),
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        verbose_name=gettext_lazy("user"),
    )
    profile = models.ForeignKey(
        ModelProfile, on_delete=models.CASCADE, verbose_name=gettext_lazy("profile")
    )
    # The admission's number (1, 2, 3, ... across the site): None while
    # waiting. The last one of each user says whose turn is next.
    served = models.PositiveBigIntegerField(
        null=True, db_index=True, verbose_name=gettext_lazy("served")
    )
    created_at = models.DateTimeField(
        auto_now_add=True, verbose_name=gettext_lazy("created at")
    )

    class Meta:
        verbose_name = gettext_lazy("ticket")
        verbose_name_plural = gettext_lazy("tickets")
        ordering = ["pk"]

    def __str__(self) -> str:
        state = "waiting" if self.served is None else "admitted"
        return f"ticket of message #{self.message_id} ({state})"
