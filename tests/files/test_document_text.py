"""PDF and DOCX to text, and their bad forms (chat.files.document_text)."""

from __future__ import annotations

import io
import zipfile

import pytest

from chat.files.document_text import DOCX_MAX_UNPACKED
from chat.files.refusals import Refused
from chat.files.uploads import Limits, prepare
from tests.files import samples

LIMITS = Limits(max_bytes=20 * 1024 * 1024, max_pixels=50_000_000, image_max_side=1568)


def test_a_pdfs_text_is_extracted():
    prepared = prepare("report.pdf", samples.pdf("Revenue rose 12 percent"), LIMITS)
    assert prepared.kind == "document"
    assert prepared.content_type == "application/pdf"
    assert prepared.text == "Revenue rose 12 percent"
    assert prepared.note == ""


def test_an_encrypted_pdf_is_refused_clearly():
    with pytest.raises(Refused) as refused:
        prepare("secret.pdf", samples.encrypted_pdf(), LIMITS)
    assert refused.value.message == (
        "secret.pdf is protected by a password: remove the protection and attach "
        "it again."
    )


def test_a_corrupt_pdf_is_refused_clearly():
    with pytest.raises(Refused) as refused:
        prepare("broken.pdf", samples.corrupt_pdf(), LIMITS)
    assert refused.value.message == (
        "broken.pdf could not be read: the PDF is damaged or incomplete."
    )


def test_a_scanned_pdf_is_kept_with_a_note_that_it_has_no_text():
    prepared = prepare("scan.pdf", samples.scanned_pdf(), LIMITS)
    assert prepared.text == ""
    assert prepared.note.startswith("scanned PDF: no text")


def test_a_docx_gives_its_paragraphs_and_tables():
    prepared = prepare(
        "letter.docx", samples.docx_file("Dear team,", "All well."), LIMITS
    )
    assert prepared.text == "Dear team,\nAll well.\ncell one\tcell two"


def test_a_docx_that_unpacks_to_too_much_is_refused_before_it_is_parsed():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", "<w/>")
        archive.writestr("word/bomb.bin", b"\0" * (DOCX_MAX_UNPACKED + 1))
    with pytest.raises(Refused, match="unpacks to too much data"):
        prepare("bomb.docx", out.getvalue(), LIMITS)
