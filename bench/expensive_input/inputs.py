"""The expensive inputs: a 50 MB multipart body, an export ZIP that inflates
to ~72 MB, a small PDF that is slow to read, and the attacks that send them."""

from __future__ import annotations

import io
import json
import os
import secrets
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

PIECE = 256 * 1024  # bytes written at a time

BIG_BODY = 50_000_000
BOMB_UNPACKED = 72_000_000
# chat/transfer/export.py: DOCUMENT_NAME (not imported: that needs Django).
EXPORT_NAME = "chatsite-conversations.json"
IMPORT_PATH = "/account/import/"  # chat/web/transfer/urls.py
ATTACHMENTS_PATH = "/attachments/"  # chat/web/urls.py
PDF_PAGES = 60
PDF_OPERATORS = 10_000


@dataclass
class Body:
    content_type: str
    pieces: list[bytes]  # sent one after another (50 MB is not copied)

    @property
    def length(self) -> int:
        return sum(map(len, self.pieces))

    def chunks(self) -> Iterator[memoryview]:
        for piece in self.pieces:
            view = memoryview(piece)
            for start in range(0, len(view), PIECE):
                yield view[start : start + PIECE]


def multipart(name: str, content_type: str, data: bytes) -> Body:
    """A form with one file, `file`, as a browser sends it."""
    boundary = "----bench" + secrets.token_hex(12)
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{name}"\r\n'
        f"Content-Type: {content_type}\r\n\r\n"
    )
    return Body(
        f"multipart/form-data; boundary={boundary}",
        [head.encode(), data, f"\r\n--{boundary}--\r\n".encode()],
    )


def export_bomb(unpacked: int = BOMB_UNPACKED) -> bytes:
    """A ZIP of a chatsite export (chat/transfer/export_format.py) whose answer is
    `unpacked` bytes of "ha ": written while deflated, never whole in memory.
    A repeat of at most 3 bytes is what deflate packs best (about 1,026:1)."""
    from chat.transfer.export_format import FORMAT, VERSION, FiguresDoc

    moment = "2025-01-01T12:00:00+00:00"
    figures: dict[str, Any] = dict.fromkeys(FiguresDoc.__annotations__)
    figures |= {"done_reason": "stop", "replaced_chars": 0}

    def message(number: int, role: str, content: str) -> dict[str, Any]:
        return {
            "number": number,
            "parent": number - 1 or None,
            "role": role,
            "content": content,
            "thinking": "",
            "status": "done",
            "error_code": "",
            "error_detail": "",
            "client_id": "",
            "model_tag": "llama-demo:3b",
            "thinking_enabled": None,
            "source": "chat",
            "written_by_asker": False,
            "replaced": False,
            "shown_at": moment,
            "created_at": moment,
            "updated_at": moment,
            "figures": figures,
        }

    marker = "\x00answer\x00"
    document = {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": moment,
        "owner": "someone",
        "folders": [],
        "conversations": [
            {
                "key": "chatsite:" + secrets.token_hex(16),
                "imported_from": None,
                "title": "Laughter",
                "created_at": moment,
                "updated_at": moment,
                "pinned_at": None,
                "archived_at": None,
                "folder": None,
                "settings": {
                    "model": None,
                    "thinking": "default",
                    "system_prompt": "",
                    "history_policy": "",
                    "history_last_n": None,
                    "temperature": None,
                },
                "messages": [
                    message(1, "user", "Laugh."),
                    message(2, "assistant", marker),
                ],
                "notices": [],
            }
        ],
    }
    before, after = json.dumps(document).encode().split(json.dumps(marker).encode())
    block = b"ha " * 100_000
    out = io.BytesIO()
    with (
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open(EXPORT_NAME, "w", force_zip64=True) as entry,
    ):
        entry.write(before + b'"')
        for _ in range(unpacked // len(block)):
            entry.write(block)
        entry.write(b'"' + after)
    return out.getvalue()


def shared_stream_pdf(pages: int = PDF_PAGES, operators: int = PDF_OPERATORS) -> bytes:
    """A PDF whose pages all draw one content stream (an indirect object
    written once, deflated), full of text operators: small on disk, and read
    again for each page by a text extractor."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    lines = [b"BT /F1 9 Tf 20 780 Td"]
    lines += [b"(w%d lorem ipsum) Tj 0 -1 Td" % (i % 61) for i in range(operators)]
    lines.append(b"ET")
    stream = DecodedStreamObject()
    stream.set_data(b"\n".join(lines))
    contents = writer._add_object(stream.flate_encode(level=9))
    font = writer._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
    )
    resources = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
    )
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Contents")] = contents
        page[NameObject("/Resources")] = resources
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@dataclass
class Attack:
    label: str
    path: str
    signed_in: bool  # with the attacker's session and a CSRF token
    body: Body = field(repr=False)
    xhr: bool = False  # as the page's script sends it (the import's partial answer)


def attacks() -> list[Attack]:
    """The four attacks, one per attacker, built here (in the attackers'
    process: the 50 MB is never pickled)."""
    big = os.urandom(BIG_BODY)
    bomb = export_bomb()
    pdf = shared_stream_pdf()
    return [
        Attack(
            f"{BIG_BODY / 1e6:g} MB multipart, POST /, signed out, no CSRF token",
            "/",
            False,
            multipart("big.bin", "application/octet-stream", big),
        ),
        Attack(
            f"{BIG_BODY / 1e6:g} MB multipart, POST {ATTACHMENTS_PATH}",
            ATTACHMENTS_PATH,
            True,
            multipart("big.txt", "text/plain", big),
        ),
        Attack(
            f"{len(bomb) / 1e3:.0f} kB ZIP import bomb ({BOMB_UNPACKED / 1e6:g} MB "
            f"unpacked), POST {IMPORT_PATH}",
            IMPORT_PATH,
            True,
            multipart("export.zip", "application/zip", bomb),
            xhr=True,
        ),
        Attack(
            f"{len(pdf) / 1e3:.0f} kB PDF, {PDF_PAGES} pages sharing one stream, "
            f"POST {ATTACHMENTS_PATH}",
            ATTACHMENTS_PATH,
            True,
            multipart("report.pdf", "application/pdf", pdf),
        ),
    ]
