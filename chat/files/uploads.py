"""One upload in, what to keep out: the file's kind from its extension, its
content checked against that kind, then read (`images`, `document_text`)."""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.utils.translation import gettext as _

from chat.files import document_text, images
from chat.files.refusals import Refused

IMAGE_EXTENSIONS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".gif": "GIF"}
IMAGE_EXTENSIONS[".webp"] = "WEBP"
ACCEPTED_EXTENSIONS = (
    *IMAGE_EXTENSIONS,
    ".pdf",
    ".docx",
    *document_text.TEXT_EXTENSIONS,
)
NAME_MAX_CHARS = 200


@dataclass(frozen=True)
class Limits:
    max_bytes: int
    max_pixels: int
    image_max_side: int
    # How much of a document is read: the rest is left out, with a note.
    pdf_max_pages: int = 2000
    text_max_chars: int = 2_000_000


@dataclass(frozen=True)
class Prepared:
    """What to store: `data` is the file kept (an image re-encoded, a document
    as uploaded), `text` what a model is given of a document."""

    name: str
    data: bytes
    content_type: str
    kind: str  # "image" | "document"
    text: str = ""
    note: str = ""
    thumbnail: bytes | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def clean_name(raw: str) -> str:
    """The file's own name: no folders (either slash), no control or format
    characters, no leading dots, at most NAME_MAX_CHARS characters with its
    extension kept; "file" when nothing is left."""
    name = raw.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(
        " " if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") else char
        for char in name
    )
    name = " ".join(name.split()).lstrip(". ")
    if len(name) > NAME_MAX_CHARS:
        suffix = PurePosixPath(name).suffix[:20]
        name = name[: NAME_MAX_CHARS - len(suffix)] + suffix
    return name or "file"


def prepare(raw_name: str, data: bytes, limits: Limits) -> Prepared:
    """Check and read one uploaded file; raise `Refused` with the reason."""
    name = clean_name(raw_name)
    if len(data) > limits.max_bytes:
        raise Refused(too_large(limits.max_bytes), 413)
    if not data:
        raise Refused(_("%(name)s is empty.") % {"name": name})
    extension = PurePosixPath(name).suffix.lower()
    if extension in IMAGE_EXTENSIONS:
        image = images.normalised(
            name,
            data,
            IMAGE_EXTENSIONS[extension],
            limits.max_pixels,
            limits.image_max_side,
        )
        return Prepared(
            name=name,
            data=image.data,
            content_type=image.content_type,
            kind="image",
            thumbnail=image.thumbnail,
        )
    if extension in document_text.PARSED or extension in document_text.TEXT_EXTENSIONS:
        text, note = document_text.text_of(
            name, extension, data, limits.pdf_max_pages, limits.text_max_chars
        )
        return Prepared(
            name=name,
            data=data,
            content_type=document_text.content_type(extension),
            kind="document",
            text=text,
            note=note,
        )
    accepted = _(
        "Attach images (PNG, JPEG, GIF, WebP), PDF, DOCX, or text: Markdown, "
        "source code, CSV, JSON, logs."
    )
    if extension:
        refused = _("%(name)s: files %(extension)s are not accepted.") % {
            "name": name,
            "extension": extension,
        }
    else:
        refused = _("%(name)s: files without an extension are not accepted.") % {
            "name": name
        }
    # Two sentences: Chinese puts no space between them.
    joined = _("%(refused)s %(accepted)s") % {"refused": refused, "accepted": accepted}
    raise Refused(joined, 415)


def too_large(limit: int) -> str:
    return _("The file is too large: attachments are limited to %(size)s.") % {
        "size": mebibytes(limit)
    }


def mebibytes(size: int) -> str:
    """20 MB, 1.5 MB, 2 kB: a limit as people read it (1 MB = 1024² bytes)."""
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} kB"
    value = size / (1024 * 1024)
    return (
        f"{value:.0f} MB" if value >= 10 or value == int(value) else f"{value:.1f} MB"
    )
