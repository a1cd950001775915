"""`manage.py look_alike_usernames`: the accounts whose usernames look alike
(chat.accounts.usernames), made before new ones were refused. Nothing is
changed: an admin renames, links or switches off what is not one person."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from chat.accounts.usernames import look_alike_groups


class Command(BaseCommand):
    help = "List the usernames that look alike (nothing is changed)."

    def handle(self, *args: Any, **options: Any) -> None:
        groups = look_alike_groups()
        for names in groups:
            self.stdout.write(", ".join(repr(name) for name in names))
        noun = "group" if len(groups) == 1 else "groups"
        self.stdout.write(f"{len(groups)} {noun} of usernames that look alike.")
