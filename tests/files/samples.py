"""Files made for the attachment tests: real PNG, JPEG, PDF and DOCX bytes,
built with the same libraries that read them."""

from __future__ import annotations

import io

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
