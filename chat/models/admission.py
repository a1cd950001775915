"""Admission tickets: one per answer, queued or holding a model slot."""

from __future__ import annotations

from django.conf import settings
from django.db import models

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
        Message, on_delete=models.CASCADE, related_name="ticket"
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    profile = models.ForeignKey(ModelProfile, on_delete=models.CASCADE)
    # The admission's number (1, 2, 3, ... across the site): None while
    # waiting. The last one of each user says whose turn is next.
    served = models.PositiveBigIntegerField(null=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        state = "waiting" if self.served is None else "admitted"
        return f"ticket of message #{self.message_id} ({state})"
