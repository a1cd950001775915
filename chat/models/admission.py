"""Admission tickets: one per answer, queued or holding a model slot, and the
line an admission decides on (`chat.live.engine.admission`).

The lock order: a transaction that admits an answer locks the site's row
first (`Line.read`), then the conversation's and its owner's rows, then the
owner's teams' (`chat.models.quotas.lock`). Whoever holds the site's row
decides; a transaction that admits nothing never waits for it. So a question's
first trip can lock the site's row and read the tickets with the conversation
(`turn_rows.prepare_turn_of`), and two answers asked at once, from the socket,
a retry or the API, never wait for each other's rows in a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import ExpressionWrapper, F, Q, QuerySet
from django.utils.translation import gettext_lazy

from chat.models import compiled_queries
from chat.models.compiled_queries import Prepared
from chat.models.messages import Message
from chat.models.profiles import ModelProfile
from chat.models.site import LOCKED_SITE_ROW, SiteDefaults


class Ticket(models.Model):
    """An answer's place at its model: waiting, or admitted (holding a slot).

    An admitted ticket holds a slot while its answer is streaming: an answer its
    process left behind when it died is marked interrupted by the orphan sweep,
    which gives the slot back without anyone touching the ticket. Finished
    answers' tickets are kept for a while: they say who was served last (see
    `chat.live.engine.admission`).
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
    # Its answer runs a tool: it gave its slot back and is out of line until
    # the tool is done (`chat.live.engine.admission.give_back`) ...
    paused = models.BooleanField(default=False, verbose_name=gettext_lazy("paused"))
    # ... then it waits again, ahead of the answers that have not begun.
    priority = models.BooleanField(default=False, verbose_name=gettext_lazy("priority"))

    class Meta:
        verbose_name = gettext_lazy("ticket")
        verbose_name_plural = gettext_lazy("tickets")
        ordering = ["pk"]

    def __str__(self) -> str:
        state = "waiting" if self.served is None else "admitted"
        return f"ticket of message #{self.message_id} ({state})"


def _tickets(_: int) -> QuerySet[Any, Any]:
    """The running and waiting tickets, and in the same trip the last
    admission's (its number is the next one's start), running or not."""
    last = Ticket.objects.order_by(F("served").desc(nulls_last=True))[:1]
    # A paused ticket (its answer runs a tool) is out of line: not live.
    streaming = Q(message__status=Message.Status.STREAMING, paused=False)
    live = ExpressionWrapper(streaming, output_field=models.BooleanField())
    return (
        Ticket.objects.filter(
            Q(message__status=Message.Status.STREAMING) | Q(pk__in=last.values("pk"))
        )
        .annotate(live=live)
        .values_list(
            # Its fields first, then the annotation (`compiled_queries` reads
            # a model's columns as one run).
            "message_id",
            "user_id",
            "profile_id",
            "served",
            "priority",
            "live",
        )
    )


# Read at each decision: compiled once (`chat.models.compiled_queries`).
TICKETS: Prepared[Ticket] = Prepared(_tickets, keyed=False, at_start=True)


@dataclass(frozen=True)
class Line:
    """What an admission decides on: the site's row, locked until the
    transaction ends, and the tickets (`TICKETS`' rows) read after the lock."""

    site: SiteDefaults
    tickets: list[Any]

    @classmethod
    def read(cls, *also: tuple[Prepared[Any], int]) -> tuple[Line, list[list[Any]]]:
        """Lock the site's row and read the tickets, first in the transaction
        that admits (the lock order above), and in the same trip the rows of
        `also`'s reads (`compiled_queries.together`), returned with the line."""
        reads: list[tuple[Prepared[Any], int]] = [
            (LOCKED_SITE_ROW, 1),
            (TICKETS, 0),
            *also,
        ]
        site_row, tickets, *rows = compiled_queries.together(*reads)
        if not site_row:  # none yet: made, then locked and everything read again
            SiteDefaults.load()
            site_row, tickets, *rows = compiled_queries.together(*reads)
        return cls(LOCKED_SITE_ROW.one(site_row), tickets), rows
