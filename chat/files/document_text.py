"""Documents to plain text: text files as they are (UTF-8, no binary content),
PDF through pypdf, DOCX through python-docx. Content must be what the
extension says: a PDF named `.txt`, or text named `.pdf`, is refused."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable

import docx
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from pypdf import PasswordType, PdfReader

from chat.files.refusals import Refused

TEXT_EXTENSIONS = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".json": "application/json",
    ".jsonl": "application/jsonl",
    ".log": "text/plain",
    ".yaml": "text/plain",
    ".yml": "text/plain",
    ".toml": "text/plain",
    ".ini": "text/plain",
    ".xml": "text/plain",
    ".html": "text/plain",
    ".css": "text/plain",
    ".sql": "text/plain",
    ".py": "text/plain",
    ".js": "text/plain",
    ".ts": "text/plain",
    ".tsx": "text/plain",
    ".jsx": "text/plain",
    ".java": "text/plain",
    ".kt": "text/plain",
    ".c": "text/plain",
    ".h": "text/plain",
    ".cpp": "text/plain",
    ".hpp": "text/plain",
    ".cs": "text/plain",
    ".go": "text/plain",
    ".rs": "text/plain",
    ".rb": "text/plain",
    ".php": "text/plain",
    ".swift": "text/plain",
    ".sh": "text/plain",
    ".diff": "text/plain",
    ".patch": "text/plain",
}
PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

# File signatures that no text file starts with.
BINARY_SIGNATURES = (
    b"%PDF-",
    b"PK\x03\x04",
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF8",
    b"\x7fELF",
    b"MZ",
    b"\x1f\x8b",
    b"\xd0\xcf\x11\xe0",
)
# A DOCX is a ZIP: its parts may not unpack to more than this.
DOCX_MAX_UNPACKED = 200 * 1024 * 1024
SCANNED = gettext_lazy("scanned PDF: no text (it holds only pictures of pages)")


def content_type(extension: str) -> str:
    if extension == ".pdf":
        return PDF
    if extension == ".docx":
        return DOCX
    return TEXT_EXTENSIONS[extension]


def text_of(
    name: str, extension: str, data: bytes, max_pages: int, max_chars: int
) -> tuple[str, str]:
    """The document's text and a note for the user ("" or why there is none,
    or that only its beginning was read: at most `max_pages` pages of a PDF,
    `max_chars` characters of any document)."""
    if extension == ".pdf":
        return _pdf_text(name, data, max_pages, max_chars)
    reader = READERS.get(extension, _plain_text)
    text, note = reader(name, data)
    if len(text) > max_chars:
        return text[:max_chars], _beginning(max_chars)
    return text, note


def _beginning(max_chars: int) -> str:
    return _("only its first %(count)s characters were read") % {
        "count": f"{max_chars:,}"
    }


def _plain_text(name: str, data: bytes) -> tuple[str, str]:
    if data.startswith(BINARY_SIGNATURES) or b"\x00" in data[:8192]:
        raise _not_text(name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _not_text(name) from None
    if "\x00" in text:
        raise _not_text(name)
    if name.lower().endswith(".json"):
        try:
            json.loads(text)
        except ValueError:
            raise Refused(
                _(
                    "%(name)s is not valid JSON: its content does not match its "
                    "extension."
                )
                % {"name": name},
                415,
            ) from None
    return text, ""


def _not_text(name: str) -> Refused:
    return Refused(
        _(
            "%(name)s is not a text file (binary content, or not UTF-8): its "
            "content does not match its extension."
        )
        % {"name": name},
        415,
    )


def _not_word(name: str) -> Refused:
    return Refused(
        _("%(name)s is not a Word document: its content does not match its extension.")
        % {"name": name},
        415,
    )


def _pdf_text(
    name: str, data: bytes, max_pages: int, max_chars: int
) -> tuple[str, str]:
    """Page by page until `max_pages` pages or `max_chars` characters: pages
    may share one costly content stream, so their number alone says little
    of the work (the worker's time budget is the bound that always holds)."""
    if b"%PDF-" not in data[:1024]:
        raise Refused(
            _("%(name)s is not a PDF: its content does not match its extension.")
            % {"name": name},
            415,
        )
    pages: list[str] = []
    read = 0
    note = ""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise Refused(
                _(
                    "%(name)s is protected by a password: remove the protection "
                    "and attach it again."
                )
                % {"name": name}
            )
        for number, page in enumerate(reader.pages):
            if number == max_pages:
                note = _("only its first %(count)s pages were read") % {
                    "count": f"{max_pages:,}"
                }
                break
            text = (page.extract_text() or "").strip()
            pages.append(text)
            read += len(text) + 2
            if read > max_chars:
                note = _beginning(max_chars)
                break
    except (Refused, MemoryError):  # (past the worker's budget: `chat.work`)
        raise
    except Exception:  # pypdf raises many kinds on a damaged file
        raise Refused(
            _("%(name)s could not be read: the PDF is damaged or incomplete.")
            % {"name": name}
        ) from None
    text = "\n\n".join(page for page in pages if page)[:max_chars]
    return text, note if text else str(SCANNED)


def _docx_text(name: str, data: bytes) -> tuple[str, str]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
            names = {entry.filename for entry in entries}
            unpacked = sum(entry.file_size for entry in entries)
    except zipfile.BadZipFile:
        raise _not_word(name) from None
    if "word/document.xml" not in names:
        raise _not_word(name)
    if unpacked > DOCX_MAX_UNPACKED:
        raise Refused(
            _("%(name)s unpacks to too much data to read safely.") % {"name": name}
        )
    try:
        document = docx.Document(io.BytesIO(data))
    except MemoryError:  # past the worker's budget (`chat.work`)
        raise
    except Exception:  # python-docx and lxml raise many kinds on a damaged file
        raise Refused(
            _("%(name)s could not be read: the document is damaged.") % {"name": name}
        ) from None
    lines = [paragraph.text for paragraph in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            lines.append("\t".join(cell.text for cell in row.cells))
    text = "\n".join(lines).strip()
    return text, "" if text else _("no text in the document")


READERS: dict[str, Callable[[str, bytes], tuple[str, str]]] = {
    ".docx": _docx_text,
}
# Read in a worker process (`chat.files.reading`): the rest are text.
PARSED = {".pdf", ".docx"}
