"""What a reader makes of an export, whatever its format: conversations and
messages ready to store (`chat.transfer.imports`), and the summary the owner
is shown, with what was left out or changed on the way."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

# PostgreSQL's text cannot hold NUL, and UTF-8 cannot encode a lone surrogate
# (JSON's "\ud800" escapes decode to one): see chat/upstream/events.py.
_NUL = "\x00"
_SURROGATE = re.compile("[\ud800-\udfff]")


class ImportRefused(Exception):
    """The file cannot be imported; the message says why, to its owner.
    Nothing of it is stored."""


@dataclass
class Summary:
    """What an import did, and the warnings: a description and how many times
    it happened ("Messages with an unknown role skipped (critic)": 3)."""

    source: str = ""  # the format's name, for people ("Open WebUI")
    conversations: int = 0
    messages: int = 0
    already_imported: int = 0
    warnings: Counter[str] = field(default_factory=Counter)
    # The time "now" of this import: dates after it are clamped to it.
    now: datetime = field(default_factory=timezone.now)

    def warn(self, description: str, count: int = 1) -> None:
        if count:
            self.warnings[description] += count

    def text(self, value: Any, limit: int | None = None) -> str:
        """A string as it can be stored: NUL removed, lone surrogates replaced
        by U+FFFD (counted), cut to `limit` characters. Anything else: ""."""
        if not isinstance(value, str):
            return ""
        if _NUL in value:
            self.warn(_("NUL characters removed"), value.count(_NUL))
            value = value.replace(_NUL, "")
        cleaned, replaced = _SURROGATE.subn("\ufffd", value)
        self.warn(_("Invalid characters (lone surrogates) replaced by �"), replaced)
        return cleaned[:limit] if limit is not None else cleaned

    def time(self, moment: datetime) -> datetime:
        """`moment`, or now if it is later: a date in the future (a clock gone
        wrong, or a hand-made file) would sort first for ever."""
        if moment > self.now:
            self.warn(_("Dates in the future set to the time of the import"))
            return self.now
        return moment

    def lines(self) -> list[str]:
        return [f"{text}: {count}" for text, count in sorted(self.warnings.items())]


@dataclass
class IncomingMessage:
    role: str  # "user" or "assistant"
    content: str
    created_at: datetime
    parent: int | None = None  # index in the conversation's messages
    thinking: str = ""
    updated_at: datetime | None = None  # None: created_at
    shown_at: datetime | None = None  # None: created_at
    replaced: bool = False
    status: str = "done"
    error_code: str = ""
    error_detail: str = ""
    client_id: str = ""
    model_tag: str = ""
    thinking_enabled: bool | None = None
    source: str = "chat"
    written_by_asker: bool = False
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass
class IncomingConversation:
    key: str  # the import key: "open-webui:<id>", ...
    imported_from: str  # "chatsite", "open-webui", "chatgpt"
    title: str
    created_at: datetime
    updated_at: datetime
    messages: list[IncomingMessage]
    pinned_at: datetime | None = None
    archived_at: datetime | None = None
    folder: str | None = None
    model: str | None = None  # a model's name: mapped to a profile with that tag
    thinking: str = "default"
    system_prompt: str = ""
    history_policy: str = ""
    history_last_n: int | None = None
    temperature: float | None = None
    notices: list[tuple[str, datetime]] = field(default_factory=list)


def one_branch(
    messages: list[IncomingMessage], summary: Summary
) -> list[IncomingMessage]:
    """A branch read from another tool as chatsite keeps one: each message the
    child of the one before, questions and answers taking turns. Messages of
    one role in a row (a question whose answer failed, an answer split around
    a tool call) are joined into one, and counted."""
    joined: list[IncomingMessage] = []
    for message in messages:
        if joined and joined[-1].role == message.role:
            last = joined[-1]
            last.content = "\n\n".join(t for t in (last.content, message.content) if t)
            last.thinking = "\n\n".join(
                t for t in (last.thinking, message.thinking) if t
            )
            last.updated_at = message.updated_at or message.created_at
            summary.warn(_("Messages of one role in a row joined into one"))
            continue
        message.parent = len(joined) - 1 if joined else None
        joined.append(message)
    return joined


def from_epoch(value: Any) -> datetime | None:
    """Seconds (or milliseconds: Open WebUI's `chat.timestamp`) since 1970 as
    a time; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = value / 1000 if value > 100_000_000_000 else value
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def storable(value: Any, *, signed: bool = False) -> bool:
    """A number the database's columns hold (integers: 32 bits)."""
    number = finite(value)
    if number is None:
        return False
    return (signed or number >= 0) and abs(number) < 2**31


def finite(value: Any) -> float | None:
    """A JSON number as a float; None for anything else (NaN, infinities and
    true/false too)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return None
    return number if number - number == 0 else None


def branch_to(
    nodes: dict[str, Any],
    current: Any,
    parent_key: str,
    *,
    newest: Callable[[dict[str, Any]], float],
    summary: Summary,
) -> list[dict[str, Any]]:
    """The nodes of a tree (id → node, each naming its parent under
    `parent_key`) from the root down to `current`, the end of the branch on
    screen. Without a `current`, the branch of the node `newest` ranks first.
    A loop or a missing parent ends the walk."""
    if not isinstance(current, str) or current not in nodes:
        candidates = [(k, n) for k, n in nodes.items() if isinstance(n, dict)]
        if not candidates:
            return []
        summary.warn(
            _("Conversations without a current message: their newest branch taken")
        )
        current = max(candidates, key=lambda pair: newest(pair[1]))[0]
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    while isinstance(current, str) and current not in seen:
        node = nodes.get(current)
        if not isinstance(node, dict):
            break
        seen.add(current)
        path.append(node)
        current = node.get(parent_key)
    return path[::-1]
