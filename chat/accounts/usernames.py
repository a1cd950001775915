"""Usernames one person cannot mistake for another's: every way an account is
made (the first admin's form, an invitation's sign-up, a provider's first
sign-in in `chat.accounts.provisioning`, the admin's user forms) goes through
`refusal`.

A name is normalised first (`normalise`: NFKC, as Django's own forms do, and
trimmed). It is refused when it looks like an existing account's (`skeleton`:
case folded, and each character replaced by the ASCII character it can pass
for, from Unicode's confusables table as the confusable-homoglyphs package
ships it: `PV_LOCAL`, `pv_local ` and `pv_loсal` with a Cyrillic с are all
`pv_local`), or when it mixes scripts with characters that pass for another
script's (`is_dangerous`: `pаypal`, but not `张三` or `wang张`).

Names are compared by scanning the accounts (`look_alike`): accounts are made
rarely, a site has thousands of them at most, and no column of Django's user
table has to change. Accounts that look alike from before this check are
listed by `manage.py look_alike_usernames`, never refused at sign-in.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from functools import cache
from typing import Any

from confusable_homoglyphs import confusables  # type: ignore[import-untyped]
from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext


def normalise(name: str) -> str:
    return unicodedata.normalize("NFKC", name).strip()


@cache
def _ascii_form(char: str) -> str:
    """The ASCII character `char` passes for, the smallest of those that pass
    for each other (l and 1: 1); itself if none. Twice: a Cyrillic letter
    passes for a Latin one, which may pass for a digit."""
    for _ in range(2):
        twins = [
            glyph["c"]
            for glyph in confusables.confusables_data.get(char, ())
            if len(glyph["c"]) == 1 and glyph["c"].isascii()
        ]
        char = min([char, *twins]) if char.isascii() else min(twins, default=char)
    return char


def skeleton(name: str) -> str:
    """What `name` looks like: two names with one skeleton look alike."""
    folded = normalise(name).casefold()
    return "".join(_ascii_form(c).casefold() for c in folded)


def look_alike(name: str, *, exclude_pk: Any = None) -> Any:
    """An account whose username looks like `name` (None: none)."""
    wanted = skeleton(name)
    users = get_user_model()._default_manager.exclude(pk=exclude_pk)
    for user in users.only("pk", "username").iterator():
        if skeleton(user.get_username()) == wanted:
            return user
    return None


def refusal(name: str, *, exclude_pk: Any = None) -> str | None:
    """Why `name` (normalised) cannot be a new username (None: it can)."""
    other = look_alike(name, exclude_pk=exclude_pk)
    if other is not None:
        return gettext(
            "“%(username)s” looks like the existing account “%(other)s”: choose "
            "another username."
        ) % {"username": name, "other": other.get_username()}
    return mixed_scripts(name)


def mixed_scripts(name: str) -> str | None:
    """Why `name` cannot be a username for the scripts it mixes (None: it can)."""
    if confusables.is_dangerous(name):
        return gettext(
            "“%(username)s” mixes scripts with letters that pass for others: "
            "choose a username written in one script."
        ) % {"username": name}
    return None


def look_alike_groups() -> list[list[str]]:
    """The existing usernames that look alike, in groups of two or more."""
    groups: dict[str, list[str]] = defaultdict(list)
    users = get_user_model()._default_manager.order_by("pk")
    for username in users.values_list("username", flat=True).iterator():
        groups[skeleton(username)].append(username)
    return [names for names in groups.values() if len(names) > 1]


class LookAlikeRefused:
    """For a user form with a username field (Django's own creation and
    change forms): the name normalised, and refused as `refusal` says. A
    username left as it was is not checked again."""

    cleaned_data: dict[str, Any]
    instance: Any

    def clean_username(self) -> Any:
        parent = getattr(super(), "clean_username", None)
        name = parent() if parent else self.cleaned_data.get("username")
        if name is None:  # refused by Django's own check (its error is added)
            return name
        name = normalise(name)
        instance = getattr(self, "instance", None)
        pk = getattr(instance, "pk", None)
        if pk is not None and name == getattr(instance, "username", None):
            return name
        why = refusal(name, exclude_pk=pk)
        if why:
            raise forms.ValidationError(why, code="look_alike")
        return name
