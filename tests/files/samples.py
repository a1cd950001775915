"""Files made for the attachment tests: real PNG, JPEG, PDF and DOCX bytes,
built with the same libraries that read them."""

from __future__ import annotations

import io
import zipfile

import docx
from PIL import Image
from pypdf import PdfReader, PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject


def png(width: int = 64, height: int = 48, colour: str = "red", mode="RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, (width, height), colour).save(out, "PNG")
    return out.getvalue()


def jpeg_with_exif(width: int = 60, height: int = 40, orientation: int = 6) -> bytes:
    """A JPEG saying it must be turned (EXIF orientation) and carrying GPS
    coordinates and a camera name, as phone pictures do."""
    image = Image.new("RGB", (width, height), "blue")
    exif = Image.Exif()
    exif[0x0112] = orientation  # Orientation
    exif[0x0110] = "Secret Phone 12"  # Model
    exif[0x8825] = {1: "N", 2: (48.0, 51.0, 29.0)}  # GPSInfo
    out = io.BytesIO()
    image.save(out, "JPEG", exif=exif)
    return out.getvalue()


def bomb_png(side: int = 12_000) -> bytes:
    """A PNG of a few kilobytes that decodes to `side`² pixels."""
    out = io.BytesIO()
    Image.new("1", (side, side), 0).save(out, "PNG", optimize=True)
    return out.getvalue()


def pdf(text: str = "Quarterly revenue rose by 12 percent") -> bytes:
    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    fonts = DictionaryObject({NameObject("/F1"): writer._add_object(font)})
    page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
    stream = DecodedStreamObject()
    stream.set_data(f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode())
    page[NameObject("/Contents")] = writer._add_object(stream)
    return _written(writer)


def scanned_pdf() -> bytes:
    """Pages without text (what a scanner makes, but without the picture)."""
    writer = PdfWriter()
    writer.add_blank_page(612, 792)
    return _written(writer)


def encrypted_pdf() -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf())))
    writer.encrypt("secret", algorithm="AES-256")
    return _written(writer)


def corrupt_pdf() -> bytes:
    return b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R" + bytes(range(256)) * 8


def _written(writer: PdfWriter) -> bytes:
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx_file(*paragraphs: str) -> bytes:
    document = docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "cell one"
    table.rows[0].cells[1].text = "cell two"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def zip_without_word() -> bytes:
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "not a word document")
    return out.getvalue()


def shared_stream_pdf(pages: int = 60, operators: int = 40_000) -> bytes:
    """A PDF of a few kilobytes whose `pages` pages all draw one compressed
    content stream of `operators` text operators: read page by page, it is
    parsed `pages` times."""
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    fonts = DictionaryObject({NameObject("/F1"): writer._add_object(font)})
    stream = DecodedStreamObject()
    stream.set_data(b"BT /F1 1 Tf " + b"1 0 Td (x) Tj " * operators + b"ET")
    shared = writer._add_object(stream.flate_encode())
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
        page[NameObject("/Contents")] = shared
    return _written(writer)


def docx_bomb(paragraphs: int = 1_500_000) -> bytes:
    """A DOCX of some tens of kilobytes whose document unpacks to about 40
    bytes a paragraph (60 MB), under the unpacked-size check."""
    out = io.BytesIO()
    docx.Document().save(out)
    source = zipfile.ZipFile(io.BytesIO(out.getvalue()))
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target:
        for entry in source.infolist():
            if entry.filename != "word/document.xml":
                target.writestr(entry, source.read(entry))
                continue
            head, tail = source.read(entry).split(b"<w:body>")
            with target.open("word/document.xml", "w", force_zip64=True) as part:
                part.write(head + b"<w:body>")
                run = b"<w:p><w:r><w:t>a</w:t></w:r></w:p>" * 10_000
                for _ in range(paragraphs // 10_000):
                    part.write(run)
                part.write(tail)
    return bomb.getvalue()


def big_png(side: int = 7000) -> bytes:
    """A PNG of about 190 kB that decodes to `side`² RGBA pixels (49 MP: under
    the default pixel cap)."""
    out = io.BytesIO()
    Image.new("RGBA", (side, side)).save(out, "PNG")
    return out.getvalue()
