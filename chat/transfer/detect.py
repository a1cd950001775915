"""Which export a file is, from its content (never its name): chatsite's own
JSON or its ZIP, Open WebUI's "Export All Chats" JSON (or one chat of it), or
ChatGPT's `conversations.json` or its ZIP.

Everything read is bounded by the size limit: a ZIP entry is read a piece at a
time and refused once it passes the limit, whatever its header claims (a ZIP
bomb). The JSON is then parsed whole, so an import takes memory in proportion
to the file, at most the limit (TRANSFER_IMPORT_MAX_BYTES)."""

from __future__ import annotations

import json
import zipfile
import zlib
from dataclasses import dataclass
from typing import IO, Any, Literal

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from chat.transfer.documents import FORMAT, VERSION
from chat.transfer.export import DOCUMENT_NAME
from chat.transfer.incoming import ImportRefused

Kind = Literal["chatsite", "open-webui", "chatgpt"]

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_PIECE = 1024 * 1024
_WHAT_WE_READ = gettext_noop(
    "chatsite can import its own export (JSON or ZIP), Open WebUI's "
    '"Export All Chats" JSON and ChatGPT\'s conversations.json (or its ZIP).'
)


@dataclass
class Detected:
    kind: Kind
    data: Any  # the parsed JSON: a document (chatsite) or a list of chats


def megabytes(size: int) -> str:
    return f"{size / 1_000_000:g} MB"


def detect(file: IO[bytes], *, limit: int) -> Detected:
    """Read `file` (seekable) and tell its format; ImportRefused if it is none
    of them, damaged, truncated or over `limit` bytes (uncompressed)."""
    start = file.read(4)
    file.seek(0)
    if start in _ZIP_MAGIC:
        raw = _from_zip(file, limit)
    else:
        raw = file.read(limit + 1)
        if len(raw) > limit:
            raise ImportRefused(
                _("The file is too large: imports are limited to %(limit)s.")
                % {"limit": megabytes(limit)}
            )
    return classify(_parse(raw))


def _from_zip(file: IO[bytes], limit: int) -> bytes:
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError, ValueError):
        raise ImportRefused(
            _(
                "The ZIP file is damaged or incomplete (perhaps cut off while it "
                "was downloaded)."
            )
        ) from None
    with archive:
        names = {info.filename.rsplit("/", 1)[-1]: info for info in archive.infolist()}
        info = names.get(DOCUMENT_NAME) or names.get("conversations.json")
        if info is None:
            raise ImportRefused(
                _(
                    "This ZIP holds neither %(document)s (chatsite's export) nor "
                    "conversations.json (ChatGPT's). %(what)s"
                )
                % {"document": DOCUMENT_NAME, "what": _(_WHAT_WE_READ)}
            )
        try:
            with archive.open(info) as entry:
                pieces, size = [], 0
                while piece := entry.read(_PIECE):
                    size += len(piece)
                    if size > limit:
                        raise ImportRefused(
                            _(
                                "%(name)s in the ZIP is too large unpacked: "
                                "imports are limited to %(limit)s."
                            )
                            % {"name": info.filename, "limit": megabytes(limit)}
                        )
                    pieces.append(piece)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError):
            raise ImportRefused(
                _("%(name)s in the ZIP is damaged or incomplete.")
                % {"name": info.filename}
            ) from None
        except (RuntimeError, NotImplementedError):
            # Encrypted, or compressed in a way Python cannot read.
            raise ImportRefused(
                _(
                    "%(name)s in the ZIP is encrypted or compressed in a way "
                    "chatsite cannot read."
                )
                % {"name": info.filename}
            ) from None
    return b"".join(pieces)


def _parse(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ImportRefused(
            _("The file is not JSON text (it is not UTF-8). %(what)s")
            % {"what": _(_WHAT_WE_READ)}
        ) from None
    if not text.strip():
        raise ImportRefused(_("The file is empty."))
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        lines = _json_lines(text) if error.msg == "Extra data" else None
        if lines is not None:
            return lines
        cut_off = error.msg.startswith("Unterminated") or error.pos >= len(
            text.rstrip()
        )
        ending = _(" It ends too early: it may have been cut off.") if cut_off else ""
        raise ImportRefused(
            _(
                "The file is not valid JSON: %(error)s (line %(line)d, column "
                "%(column)d).%(ending)s %(what)s"
            )
            % {
                "error": error.msg.lower(),
                "line": error.lineno,
                "column": error.colno,
                "ending": ending,
                "what": _(_WHAT_WE_READ),
            }
        ) from None
    except (RecursionError, ValueError):
        # Nesting deeper than Python's parser goes, or an integer too long.
        raise ImportRefused(
            _(
                "The file's JSON is too deeply nested or has a number too long "
                "to read. %(what)s"
            )
            % {"what": _(_WHAT_WE_READ)}
        ) from None


def _json_lines(text: str) -> list[Any] | None:
    """Open WebUI's /api/v1/chats/all as sent (NDJSON: a chat a line), or None
    if the text is not that."""
    try:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    except (ValueError, RecursionError):
        return None
    return (
        rows
        if rows and all(isinstance(r, dict) and "chat" in r for r in rows)
        else None
    )


def classify(data: Any) -> Detected:
    if isinstance(data, dict):
        if data.get("format") == FORMAT:
            version = data.get("version")
            if not isinstance(version, int) or not 1 <= version <= VERSION:
                raise ImportRefused(
                    _(
                        "This chatsite export has version %(version)r; this site "
                        "reads versions up to %(latest)s. Update this site to "
                        "import it."
                    )
                    % {"version": version, "latest": VERSION}
                )
            return Detected("chatsite", data)
        data = [data]  # one chat of Open WebUI or ChatGPT
    if isinstance(data, list):
        if not data:
            raise ImportRefused(_("The file holds no conversations."))
        first = data[0]
        if isinstance(first, dict) and isinstance(first.get("mapping"), dict):
            return Detected("chatgpt", data)
        chat = first.get("chat") if isinstance(first, dict) else None
        if isinstance(chat, dict) and isinstance(chat.get("history"), dict):
            return Detected("open-webui", data)
    raise ImportRefused(
        _("This file is not an export chatsite can read. %(what)s")
        % {"what": _(_WHAT_WE_READ)}
    )
