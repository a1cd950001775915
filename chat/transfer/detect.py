"""An export read from its file: which one it is, from its content (never its
name): chatsite's own JSON or its ZIP, Open WebUI's "Export All Chats" JSON
(or one chat of it, or its NDJSON), or ChatGPT's `conversations.json` or its
ZIP; then its conversations, read one at a time (`chat.transfer.stream`) and
written to a result file that the importer stores from
(`chat.transfer.imports`).

`read_export` takes paths and gives back plain data, so it can run in a
worker process of its own: whatever a hostile file costs (the budgets of
`stream.Limits`), it costs there. Every conversation is read, and checked,
before the first is stored: a refusal imports nothing."""

from __future__ import annotations

import pickle
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import ijson  # type: ignore[import-untyped]
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from chat.transfer import chatgpt, chatsite, open_webui
from chat.transfer.export import DOCUMENT_NAME
from chat.transfer.export_format import FORMAT, VERSION
from chat.transfer.incoming import ImportRefused, IncomingConversation, Summary
from chat.transfer.stream import (
    Counted,
    Limits,
    TooDeep,
    TooLarge,
    TooManyValues,
    Values,
    opened,
)

_WHAT_WE_READ = gettext_noop(
    "chatsite can import its own export (JSON or ZIP), Open WebUI's "
    '"Export All Chats" JSON and ChatGPT\'s conversations.json (or its ZIP).'
)
_SOURCES = {"chatsite": chatsite.SOURCE, "chatgpt": chatgpt.SOURCE}
_SOURCES["open-webui"] = open_webui.SOURCE
_LONE_SURROGATES = gettext_noop("Invalid characters (lone surrogates) replaced by �")


@dataclass
class Parsed:
    """What `read_export` found: the format, and how many conversations it
    wrote to the result file (`results` reads them back)."""

    kind: str
    source: str  # for people: "Open WebUI"
    conversations: int = 0
    summary: Summary = field(default_factory=Summary)


def megabytes(size: int) -> str:
    return f"{size / 1_000_000:g} MB"


def read_export(path: str, result: str, limit: int) -> Parsed:
    """Read the export at `path` (at most `limit` bytes of JSON, unpacked) and
    write its folders and conversations to `result`; ImportRefused if it is
    none of the formats, damaged, truncated or over a budget."""
    limits = Limits(unpacked=limit)
    with (
        open(result, "wb") as out,
        _Refusals(limits) as refusals,
        opened(path, limits, (DOCUMENT_NAME, "conversations.json")) as (name, json),
    ):
        refusals.name, refusals.counted = name, json
        parsed = _Reader(Values(json, limits), _Results(out)).read()
        _end(json)
        parsed.summary.warn(_(_LONE_SURROGATES), json.surrogates.replaced)
        return parsed


def results(path: str) -> Iterator[tuple[str, Any]]:
    """What `read_export` wrote: ("folder", (name, created_at)) and
    ("conversation", IncomingConversation), in the file's order."""
    with open(path, "rb") as file:
        while True:
            try:
                yield pickle.load(file)  # written by `_Results`, never a user
            except EOFError:
                return


class _Results:
    def __init__(self, out: IO[bytes]) -> None:
        self.out = out

    def folder(self, name: str, created_at: Any) -> None:
        pickle.dump(("folder", (name, created_at)), self.out)

    def conversation(self, conversation: IncomingConversation | None) -> int:
        if conversation is None:
            return 0
        pickle.dump(("conversation", conversation), self.out)
        return 1


class _Reader:
    def __init__(self, values: Values, results: _Results) -> None:
        self.values, self.results = values, results

    def read(self) -> Parsed:
        try:
            return self._read()
        except _NotAnExport:
            # A file cut off, or not JSON at all, is said to be that: the rest
            # read for its syntax alone (ijson raises), nothing built.
            for _event in self.values.events:
                pass
            raise _not_an_export() from None

    def _read(self) -> Parsed:
        first = self.values.next()
        if first is None:
            raise ImportRefused(_("The file is empty."))
        if first[0] == "start_array":
            return self._chats(self.values.items(), ended=True)
        if first[0] != "start_map":
            raise _NotAnExport
        head: dict[str, Any] = {}
        parsed: Parsed | None = None
        self.values.start_item()
        for key in self.values.map_keys():
            if head.get("format") == FORMAT and key in ("folders", "conversations"):
                parsed = parsed or Parsed("chatsite", chatsite.SOURCE)
                _check_version(head)
                self._chatsite(key, parsed)
                head[key] = True
            else:
                head[key] = self.values.build(_next(self.values), depth=1, item=False)
        if head.get("format") == FORMAT:
            _check_version(head)
            for key in ("folders", "conversations"):
                if key not in head:
                    raise ImportRefused(
                        _("%(where)s has no list of %(key)s.")
                        % {"where": _("The export"), "key": key}
                    )
            assert parsed is not None
            return parsed
        # One chat of Open WebUI or ChatGPT, or Open WebUI's NDJSON (a chat a
        # line): each top-level object is a chat.
        return self._chats(self._objects(head), ended=False)

    def _chatsite(self, key: str, parsed: Parsed) -> None:
        event = _next(self.values)
        if key == "folders":
            value = self.values.build(event, depth=1)
            for name, created_at in chatsite.folders(value):
                self.results.folder(name, created_at)
            return
        if event[0] != "start_array":
            raise ImportRefused(
                _("%(where)s has no list of %(key)s.")
                % {"where": _("The export"), "key": key}
            )
        for n, item in enumerate(self.values.items(depth=2), 1):
            conversation = chatsite.conversation(item, n, parsed.summary)
            parsed.conversations += self.results.conversation(conversation)

    def _objects(self, head: dict[str, Any]) -> Iterator[Any]:
        yield head
        while (event := self.values.next()) is not None:
            if event[0] != "start_map":
                raise _invalid(_("extra data after the first value"), cut_off=False)
            yield self.values.build(event)

    def _chats(self, items: Iterator[Any], *, ended: bool) -> Parsed:
        first = next(items, None)
        if first is None:
            raise ImportRefused(_("The file holds no conversations."))
        kind, read = _chat_format(first)
        parsed = Parsed(kind, _SOURCES[kind])
        parsed.conversations += self.results.conversation(read(first, parsed.summary))
        for item in items:
            parsed.conversations += self.results.conversation(
                read(item, parsed.summary)
            )
        if ended and self.values.next() is not None:
            raise _invalid(_("extra data after the first value"), cut_off=False)
        return parsed


Read = Callable[[Any, Summary], IncomingConversation | None]


def _chat_format(first: Any) -> tuple[str, Read]:
    if isinstance(first, dict) and isinstance(first.get("mapping"), dict):
        return "chatgpt", chatgpt.conversation
    chat = first.get("chat") if isinstance(first, dict) else None
    if isinstance(chat, dict) and isinstance(chat.get("history"), dict):
        return "open-webui", open_webui.conversation
    raise _NotAnExport


def _check_version(head: dict[str, Any]) -> None:
    version = head.get("version")
    if not isinstance(version, int) or not 1 <= version <= VERSION:
        raise ImportRefused(
            _(
                "This chatsite export has version %(version)r; this site "
                "reads versions up to %(latest)s. Update this site to "
                "import it."
            )
            % {"version": version, "latest": VERSION}
        )


def _next(values: Values) -> tuple[str, Any]:
    event = values.next()
    if event is None:  # ijson raises first at a cut-off text
        raise _invalid(_("it ends too early"), cut_off=True)
    return event


def _end(json: Counted) -> None:
    """Read to the end: a ZIP's entry checks its CRC only there."""
    while json.read(64 * 1024):
        pass


class _NotAnExport(Exception):
    pass


def _not_an_export() -> ImportRefused:
    return ImportRefused(
        _("This file is not an export chatsite can read. %(what)s")
        % {"what": _(_WHAT_WE_READ)}
    )


def _invalid(error: str, *, cut_off: bool) -> ImportRefused:
    ending = _(" It ends too early: it may have been cut off.") if cut_off else ""
    return ImportRefused(
        _("The file is not valid JSON: %(error)s.%(ending)s %(what)s")
        % {"error": error, "ending": ending, "what": _(_WHAT_WE_READ)}
    )


class _Refusals:
    """What reading can raise, said as ImportRefused. A context manager (not
    a decorator) so it knows the ZIP entry's name once one is opened."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.name = ""
        self.counted: Counted | None = None

    def __enter__(self) -> _Refusals:
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if error is None or isinstance(error, ImportRefused):
            return
        refusal = self._refusal(error)
        if refusal is not None:
            raise refusal from None

    def _refusal(self, error: BaseException) -> ImportRefused | None:
        name = error.name if isinstance(error, TooLarge) and error.name else self.name
        limit = megabytes(self.limits.unpacked)
        if isinstance(error, TooLarge) and error.what == "item":
            return ImportRefused(
                _(
                    "The file is not a valid export: one of its conversations is "
                    "larger than %(size)s. %(what)s"
                )
                % {"size": megabytes(self.limits.item_bytes), "what": _(_WHAT_WE_READ)}
            )
        if isinstance(error, TooLarge) and name:
            reason = (
                _("imports are limited to %(limit)s unpacked") % {"limit": limit}
                if error.what == "unpacked"
                else _(
                    "it unpacks to more than %(ratio)s times its packed size, "
                    "which no export does"
                )
                % {"ratio": self.limits.ratio}
            )
            return ImportRefused(
                _("%(name)s in the ZIP is too large once unpacked: %(reason)s.")
                % {"name": name, "reason": reason}
            )
        if isinstance(error, TooLarge):
            return ImportRefused(
                _("The file is too large: imports are limited to %(limit)s.")
                % {"limit": limit}
            )
        if isinstance(error, TooDeep | TooManyValues):
            return ImportRefused(
                _(
                    "The file is not a valid export: its JSON is too deeply nested "
                    "(more than %(depth)s levels) or one conversation holds more "
                    "than %(values)s values. %(what)s"
                )
                % {
                    "depth": self.limits.depth,
                    "values": f"{self.limits.item_values:,}",
                    "what": _(_WHAT_WE_READ),
                }
            )
        if isinstance(error, KeyError):
            return ImportRefused(
                _(
                    "This ZIP holds neither %(document)s (chatsite's export) nor "
                    "conversations.json (ChatGPT's). %(what)s"
                )
                % {"document": DOCUMENT_NAME, "what": _(_WHAT_WE_READ)}
            )
        if isinstance(error, zipfile.BadZipFile | zlib.error | EOFError) and not name:
            return ImportRefused(
                _(
                    "The ZIP file is damaged or incomplete (perhaps cut off while "
                    "it was downloaded)."
                )
            )
        if isinstance(error, zipfile.BadZipFile | zlib.error | EOFError | OSError):
            return ImportRefused(
                _("%(name)s in the ZIP is damaged or incomplete.") % {"name": name}
            )
        if isinstance(error, RuntimeError | NotImplementedError) and name:
            # Encrypted, or compressed in a way Python cannot read.
            return ImportRefused(
                _(
                    "%(name)s in the ZIP is encrypted or compressed in a way "
                    "chatsite cannot read."
                )
                % {"name": name}
            )
        if isinstance(error, ijson.JSONError | UnicodeDecodeError | ValueError):
            return self._invalid_json(error)
        return None

    def _invalid_json(self, error: BaseException) -> ImportRefused:
        counted = self.counted
        text = error.args[0] if error.args else str(error)
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        first_line = str(text).strip().splitlines()[0] if str(text).strip() else ""
        if counted is not None and counted.blank:
            return ImportRefused(_("The file is empty."))
        cut_off = "premature EOF" in first_line or (
            counted is not None and counted.at_end
        )
        return _invalid(first_line.rstrip("."), cut_off=cut_off)
