"""`manage.py create_api_key USERNAME --name NAME`: an API key for provisioning
and scripts. The key is the only thing on stdout (one line), so that
`KEY=$(manage.py create_api_key ...)` holds just the key; everything else goes
to stderr. Audited like a key made on the user page, with the method
"command" and no actor (an operator, not the owner, made it)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from chat.models import ApiKey, ModelProfile
from chat.models.api_keys import api_access_for

NAME_LENGTH = ApiKey._meta.get_field("name").max_length or 100


class Command(BaseCommand):
    help = (
        "Make an API key for USERNAME and print it, alone on one line on stdout "
        "(it is shown only this once: only its digest is stored)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", required=True, help="What will use the key.")
        parser.add_argument(
            "--expires-days",
            type=int,
            metavar="N",
            help="The key expires in N days (default: never).",
        )
        parser.add_argument(
            "--model",
            action="append",
            default=[],
            dest="models",
            metavar="TAG",
            help="Only this model (repeat for more; default: every model the "
            "user may use).",
        )
        parser.add_argument(
            "--store-conversations",
            action="store_true",
            help="Keep the key's answers as conversations in the user's list.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = _active_user(options["username"])
        name = options["name"].strip()
        if not name or len(name) > NAME_LENGTH:
            raise CommandError(f"--name must be 1 to {NAME_LENGTH} characters.")
        days = options["expires_days"]
        if days is not None and days < 1:
            raise CommandError("--expires-days must be 1 or more.")
        profiles = _usable_models(user, options["models"])
        api_key, key = ApiKey.issue(
            user,
            name,
            expires_at=timezone.now() + timedelta(days=days) if days else None,
            profiles=profiles,
            store_conversations=options["store_conversations"],
            actor=None,
            method="command",
        )
        self.stderr.write(
            f"API key “{api_key.name}” ({api_key.shown}…) made for "
            f"{user.get_username()}; it is shown only now."
        )
        if not api_access_for(user):
            self.stderr.write(
                "Note: the site's API is not open to this user now (Site "
                "defaults, API): the key is refused until it is."
            )
        self.stdout.write(key)


def _active_user(username: str) -> Any:
    user = get_user_model()._default_manager.filter(username=username).first()
    if user is None:
        raise CommandError(f"No user is called {username!r}.")
    if not user.is_active:
        raise CommandError(
            f"The account {username!r} is switched off: switch it on first."
        )
    return user


def _usable_models(user: Any, tags: list[str]) -> list[ModelProfile]:
    """The profiles named by `tags` (a tag served by two servers names both),
    each one `user` may use."""
    profiles: list[ModelProfile] = []
    for tag in dict.fromkeys(tags):
        found = ModelProfile.objects.filter(tag=tag)
        if not found.exists():
            raise CommandError(f"No model profile has the tag {tag!r}.")
        usable = list(found.usable_by(user))
        if not usable:
            raise CommandError(
                f"{user.get_username()} may not use {tag!r} (switched off, or "
                "limited to teams they are not on)."
            )
        profiles += usable
    return profiles
