"""An upload's kind from its extension, its content checked against it, and its
name cleaned (chat.files.uploads)."""

from __future__ import annotations

import pytest

from chat.files.refusals import Refused
from chat.files.uploads import Limits, clean_name, prepare
from tests.files import samples

LIMITS = Limits(max_bytes=1024 * 1024, max_pixels=50_000_000, image_max_side=1568)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\eve\\report.pdf", "report.pdf"),
        ("a\x00b\x07c\r\nd.txt", "a b c d.txt"),
        ("\u202egnp.exe", "gnp.exe"),  # a right-to-left override (format char)
        ("..hidden.txt", "hidden.txt"),
        ("/", "file"),
        ("x" * 300 + ".md", "x" * 197 + ".md"),
    ],
)
def test_a_name_keeps_only_the_files_own_printable_name(raw, clean):
    assert clean_name(raw) == clean


def test_a_file_over_the_limit_is_refused_as_too_large():
    with pytest.raises(Refused) as refused:
        prepare("big.txt", b"x" * (LIMITS.max_bytes + 1), LIMITS)
    assert refused.value.status == 413
    assert refused.value.message == (
        "The file is too large: attachments are limited to 1 MB."
    )


@pytest.mark.parametrize("name", ["setup.exe", "archive.zip", "noextension"])
def test_a_type_not_accepted_is_refused_with_what_is(name):
    with pytest.raises(Refused) as refused:
        prepare(name, b"MZ\x90\x00", LIMITS)
    assert refused.value.status == 415
    assert "are not accepted. Attach images (PNG, JPEG" in refused.value.message


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("photo.png", b"this is plain text, not a picture"),
        ("photo.jpg", samples.png()),  # a PNG named .jpg
        ("notes.txt", samples.pdf()),
        ("notes.md", samples.png()),
        ("data.json", b"{not json"),
        ("report.pdf", b"Just some text pretending"),
        ("letter.docx", b"plain text"),
        ("letter.docx", samples.zip_without_word()),
        ("latin1.txt", "caf\xe9".encode("latin-1")),
    ],
)
def test_content_that_does_not_match_its_extension_is_refused(name, data):
    with pytest.raises(Refused) as refused:
        prepare(name, data, LIMITS)
    assert refused.value.status == 415
    assert "does not match its extension" in refused.value.message


def test_an_empty_file_is_refused():
    with pytest.raises(Refused, match="empty"):
        prepare("empty.txt", b"", LIMITS)


@pytest.mark.parametrize(
    ("name", "data", "text"),
    [
        (
            "notes.md",
            "# Title\n\nsome *text* é\n".encode(),
            "# Title\n\nsome *text* é\n",
        ),
        ("bom.csv", b"\xef\xbb\xbfa,b\n1,2\n", "a,b\n1,2\n"),
        ("data.json", b'{"a": [1, 2]}', '{"a": [1, 2]}'),
        ("server.log", b"12:00 INFO started\n", "12:00 INFO started\n"),
        ("main.py", b"print('hi')\n", "print('hi')\n"),
    ],
)
def test_text_documents_are_kept_with_their_text(name, data, text):
    prepared = prepare(name, data, LIMITS)
    assert (prepared.kind, prepared.text, prepared.data) == ("document", text, data)
    assert prepared.note == ""
