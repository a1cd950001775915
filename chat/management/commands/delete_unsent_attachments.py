"""`manage.py delete_unsent_attachments`: delete the files uploaded to a
composer but never sent with a question, a day after their upload
(chat.models.Attachment.delete_unsent), everyone's, from storage too. For a
daily timer (cron, systemd), like delete_empty_conversations."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from chat.models import Attachment


class Command(BaseCommand):
    help = "Delete uploaded files never sent with a question, a day after upload."

    def handle(self, *args: Any, **options: Any) -> None:
        deleted = Attachment.delete_unsent()
        noun = "file" if deleted == 1 else "files"
        self.stdout.write(f"Deleted {deleted} unsent {noun}.")
