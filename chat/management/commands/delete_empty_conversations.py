"""`manage.py delete_empty_conversations`: delete the conversations that never
got a message and were not touched for a day (chat.models.sidebar.delete_empty),
everyone's. "New conversation" cleans up its user's own on the way; this is for
a daily timer (cron, systemd) to catch the rest."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from chat.models import sidebar


class Command(BaseCommand):
    help = (
        "Delete the conversations that never got a message, untouched for a day "
        "(an answer being written is never taken: its question is stored)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        deleted = sidebar.delete_empty()
        noun = "conversation" if deleted == 1 else "conversations"
        self.stdout.write(f"Deleted {deleted} empty {noun}.")
