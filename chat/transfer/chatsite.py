"""chatsite's own export (`chat.transfer.export_format`) read back: every message
with its place in the tree, its versions, figures and times, exactly.

It is our own format, so anything off in it (a hand edit, a damaged copy) is
refused with where it is, rather than guessed at."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from django.utils.translation import gettext as _

from chat.models import HistoryPolicy, Message, ThinkingMode
from chat.transfer.export import FIGURES
from chat.transfer.incoming import (
    ImportRefused,
    IncomingConversation,
    IncomingMessage,
    Summary,
    storable,
)

SOURCE = "a chatsite export"

# The choices, once: an enum's `.values` builds a new list on every call, and
# a file has a message per line of these checks.
THINKING_MODES: Final = frozenset(ThinkingMode.values)
HISTORY_POLICIES: Final = frozenset(["", *HistoryPolicy.values])
ROLES: Final = frozenset(Message.Role.values)
STATUSES: Final = frozenset(Message.Status.values)
SOURCES: Final = frozenset(Message.Source.values)


def folders(value: Any) -> list[tuple[str, datetime]]:
    """The export's `folders` (chatsite's export keeps empty ones too)."""
    return [
        (_str(f, "name", "A folder"), _time(f, "created_at", "A folder"))
        for f in _list({"folders": value}, "folders", _("The export"))
    ]


def conversation(item: Any, number: int, summary: Summary) -> IncomingConversation:
    """The export's conversation `number` (from 1)."""
    return _conversation(item, _("Conversation %(n)s") % {"n": number}, summary)


def _conversation(item: Any, where: str, summary: Summary) -> IncomingConversation:
    if not isinstance(item, dict):
        raise ImportRefused(
            _("%(where)s of the export is not an object.") % {"where": where}
        )
    settings = item.get("settings")
    if not isinstance(settings, dict):
        raise ImportRefused(_("%(where)s has no settings.") % {"where": where})
    messages = [
        _message(m, _message_place(where, i), i, summary)
        for i, m in enumerate(_list(item, "messages", where), 1)
    ]
    _check_tree(messages, where)
    key = _str(item, "key", where)
    if not key:
        raise ImportRefused(_("%(where)s has no key.") % {"where": where})
    return IncomingConversation(
        key=key,
        imported_from=_optional_str(item, "imported_from", where) or "chatsite",
        title=_str(item, "title", where),
        created_at=_time(item, "created_at", where),
        updated_at=_time(item, "updated_at", where),
        pinned_at=_optional_time(item, "pinned_at", where),
        archived_at=_optional_time(item, "archived_at", where),
        folder=_optional_str(item, "folder", where),
        model=_optional_str(settings, "model", where),
        thinking=_choice(settings, "thinking", THINKING_MODES, where),
        system_prompt=_str(settings, "system_prompt", where),
        history_policy=_choice(settings, "history_policy", HISTORY_POLICIES, where),
        history_last_n=_optional_number(settings, "history_last_n", int, where),
        temperature=_optional_number(settings, "temperature", float, where),
        messages=messages,
        notices=[
            (_str(n, "text", where), _time(n, "created_at", where))
            for n in _list(item, "notices", where)
        ],
    )


def _message(item: Any, where: str, number: int, summary: Summary) -> IncomingMessage:
    if not isinstance(item, dict):
        raise ImportRefused(_("%(where)s is not an object.") % {"where": where})
    if item.get("number") != number:
        raise ImportRefused(
            _("%(where)s is numbered %(number)s.")
            % {"where": where, "number": repr(item.get("number"))}
        )
    role = item.get("role")
    if role not in ROLES:
        raise ImportRefused(
            _(
                '%(where)s has the role %(role)s: only "user" and "assistant" '
                "are chatsite's."
            )
            % {"where": where, "role": repr(role)}
        )
    parent = item.get("parent")
    if parent is not None and (
        not isinstance(parent, int)
        or isinstance(parent, bool)
        or not 1 <= parent < number
    ):
        raise ImportRefused(
            _("%(where)s follows %(parent)s, not a message before it.")
            % {"where": where, "parent": repr(parent)}
        )
    figures = item.get("figures")
    if not isinstance(figures, dict):
        raise ImportRefused(_("%(where)s has no figures.") % {"where": where})
    status = _choice(item, "status", STATUSES, where)
    if status == Message.Status.STREAMING:
        # Its writer is elsewhere: here it would wait for ever (and hold up
        # the conversation's next turn) until the orphan sweep ended it.
        status = Message.Status.INTERRUPTED
        summary.warn(_("Answers still being written when exported, marked interrupted"))
    thinking_enabled = item.get("thinking_enabled")
    if thinking_enabled is not None and not isinstance(thinking_enabled, bool):
        raise ImportRefused(
            _("%(where)s has a thinking_enabled that is not true/false.")
            % {"where": where}
        )
    return IncomingMessage(
        role=role,
        parent=parent - 1 if parent is not None else None,
        content=_str(item, "content", where),
        thinking=_str(item, "thinking", where),
        status=status,
        error_code=_str(item, "error_code", where),
        error_detail=_str(item, "error_detail", where),
        client_id=_str(item, "client_id", where),
        model_tag=_str(item, "model_tag", where),
        thinking_enabled=thinking_enabled,
        source=_choice(item, "source", SOURCES, where),
        written_by_asker=item.get("written_by_asker") is True,
        replaced=item.get("replaced") is True,
        shown_at=_time(item, "shown_at", where),
        created_at=_time(item, "created_at", where),
        updated_at=_time(item, "updated_at", where),
        figures={name: _figure(figures, name, where) for name in FIGURES},
    )


def _message_place(where: str, number: int) -> str:
    return _("%(where)s, message %(number)s") % {"where": where, "number": number}


def _check_tree(messages: list[IncomingMessage], where: str) -> None:
    """The invariants of `chat.models.versions`: an answer follows its
    question and a question an answer; the shown messages are one branch."""
    shown_children: dict[int | None, int] = {}
    for i, message in enumerate(messages):
        parent = messages[message.parent] if message.parent is not None else None
        if parent is not None and parent.role == message.role:
            raise ImportRefused(
                _("%(where)s follows a message of its own role.")
                % {"where": _message_place(where, i + 1)}
            )
        if message.replaced:
            continue
        if parent is not None and parent.replaced:
            raise ImportRefused(
                _("%(where)s is shown below a message that is not.")
                % {"where": _message_place(where, i + 1)}
            )
        if message.parent in shown_children:
            raise ImportRefused(
                _("%(where)s is shown beside another version.")
                % {"where": _message_place(where, i + 1)}
            )
        shown_children[message.parent] = i


def _list(item: dict[str, Any], key: str, where: str) -> list[Any]:
    value = item.get(key)
    if not isinstance(value, list):
        raise ImportRefused(
            _("%(where)s has no list of %(key)s.") % {"where": where, "key": key}
        )
    return value


def _str(item: Any, key: str, where: str) -> str:
    value = item.get(key) if isinstance(item, dict) else None
    if not isinstance(value, str):
        raise ImportRefused(
            _("%(where)s: %(key)s is missing or not text.")
            % {"where": where, "key": key}
        )
    return value


def _optional_str(item: dict[str, Any], key: str, where: str) -> str | None:
    return None if item.get(key) is None else _str(item, key, where)


def _choice(item: dict[str, Any], key: str, choices: frozenset[str], where: str) -> str:
    value = _str(item, key, where)
    if value not in choices:
        raise ImportRefused(
            _("%(where)s: %(key)s %(value)s is not one of %(choices)s.")
            % {
                "where": where,
                "key": key,
                "value": repr(value),
                "choices": sorted(choices),
            }
        )
    return value


def _time(item: Any, key: str, where: str) -> datetime:
    text = _str(item, key, where)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ImportRefused(
            _("%(where)s: %(key)s %(value)s is not a time with its zone.")
            % {"where": where, "key": key, "value": repr(text)}
        )
    return moment


def _optional_time(item: dict[str, Any], key: str, where: str) -> datetime | None:
    return None if item.get(key) is None else _time(item, key, where)


def _optional_number(
    item: dict[str, Any], key: str, kind: type[int] | type[float], where: str
) -> Any:
    value = item.get(key)
    if value is None:
        return None
    if not storable(value, signed=kind is float):
        raise ImportRefused(
            _("%(where)s: %(key)s is not a number.") % {"where": where, "key": key}
        )
    if kind is int and (not isinstance(value, int) or value < 0):
        raise ImportRefused(
            _("%(where)s: %(key)s is not a whole number.")
            % {"where": where, "key": key}
        )
    return kind(value)


def _figure(figures: dict[str, Any], name: str, where: str) -> Any:
    value = figures.get(name)
    if name == "done_reason":
        return value if isinstance(value, str) else ""
    if name == "replaced_chars":
        value = 0 if value is None else value
    if value is None:
        return None
    if not storable(value):
        raise ImportRefused(
            _("%(where)s: the figure %(name)s is not a number.")
            % {"where": where, "name": name}
        )
    return value
