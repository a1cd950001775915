"""`manage.py import_conversations USERNAME FILE`: import an export (chatsite's
own, Open WebUI's or ChatGPT's, told apart by its content) for USERNAME (all of
it or, refused, none: `chat.transfer.imports`), and print what was imported.
The size limit is the site's (TRANSFER_IMPORT_MAX_BYTES, unpacked for a ZIP)
unless --max-mb raises it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.transfer.imports import import_file
from chat.transfer.incoming import ImportRefused


class Command(BaseCommand):
    help = (
        "Import conversations for USERNAME from FILE: chatsite's export (JSON or "
        "ZIP), Open WebUI's Export All Chats JSON, or ChatGPT's "
        "conversations.json (or its ZIP)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--max-mb",
            type=float,
            metavar="N",
            help="Refuse a file (unpacked) over N MB (default: the site's limit, "
            "TRANSFER_IMPORT_MAX_BYTES).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        owner = _user(options["username"])
        path: Path = options["file"]
        max_mb = options["max_mb"]
        limit = int(max_mb * 1_000_000) if max_mb is not None else None
        try:
            with path.open("rb") as file:
                summary = import_file(owner, file, limit=limit)
        except OSError as error:
            raise CommandError(f"Cannot read {path}: {error.strerror}.") from None
        except ImportRefused as refusal:
            raise CommandError(f"{refusal} Nothing was imported.") from None
        self.stdout.write(
            f"Imported from {summary.source}: {summary.conversations} "
            f"conversation(s), {summary.messages} message(s); "
            f"{summary.already_imported} skipped as already imported."
        )
        for line in summary.lines():
            self.stdout.write(f"Warning: {line}")


def _user(username: str) -> Any:
    try:
        return get_user_model().objects.get_by_natural_key(username)
    except get_user_model().DoesNotExist:
        raise CommandError(f"There is no user {username!r}.") from None
