"""`manage.py export_conversations USERNAME OUT.zip`: the ZIP a user downloads
from their page (chatsite's JSON document and a Markdown file a
conversation), written a piece at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.management.commands.import_conversations import _user
from chat.transfer.export import for_export, zip_stream


class Command(BaseCommand):
    help = "Export all conversations of USERNAME to a ZIP file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("out", type=Path)

    def handle(self, *args: Any, **options: Any) -> None:
        owner = _user(options["username"])
        out: Path = options["out"]
        partial = out.with_name(out.name + ".partial")
        try:
            with partial.open("wb") as file:
                for piece in zip_stream(owner):
                    file.write(piece)
            partial.replace(out)  # never a half-written OUT.zip
        except OSError as error:
            partial.unlink(missing_ok=True)
            raise CommandError(f"Cannot write {out}: {error.strerror}.") from None
        count = for_export(owner).count()
        self.stdout.write(f"Exported {count} conversation(s) to {out}.")
