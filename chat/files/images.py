"""Pictures: opened by Pillow only after their header is checked (the format
must be the one the name says, and not too many pixels to decode), then turned
upright from their EXIF orientation, stripped of metadata (only pixels are
copied to the new file), downscaled to the model's limit and re-encoded."""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from PIL import Image, ImageOps, UnidentifiedImageError

from chat.files.refusals import Refused

THUMBNAIL_SIDE = 320


@dataclass(frozen=True)
class Normalised:
    data: bytes
    content_type: str
    thumbnail: bytes


def normalised(
    name: str, data: bytes, expected: str, max_pixels: int, max_side: int
) -> Normalised:
    with warnings.catch_warnings():
        # Pillow's own bomb guard warns first and refuses at twice its limit;
        # ours refuses at `max_pixels`, before a pixel is decoded.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(data))
            found = image.format
            width, height = image.size
        except (UnidentifiedImageError, Image.DecompressionBombError, OSError):
            raise not_matching(name, expected) from None
        except Image.DecompressionBombWarning:
            raise bomb(name) from None
        if found != expected and not {found, expected} <= {"JPEG", "MPO"}:
            raise not_matching(name, expected)
        if width * height > max_pixels:
            raise bomb(name)
        try:
            image.load()
            upright = ImageOps.exif_transpose(image)
        except (OSError, ValueError, Image.DecompressionBombWarning):
            raise Refused(
                f"{name} could not be read: the image is damaged or cut short."
            ) from None
    keeps_alpha = upright.mode in ("RGBA", "LA", "PA") or (
        upright.mode == "P" and "transparency" in upright.info
    )
    picture = upright.convert("RGBA" if keeps_alpha else "RGB")
    picture.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    small = picture.copy()
    small.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE), Image.Resampling.LANCZOS)
    if keeps_alpha:
        return Normalised(_encoded(picture, "PNG"), "image/png", _encoded(small, "PNG"))
    return Normalised(_encoded(picture, "JPEG"), "image/jpeg", _encoded(small, "JPEG"))


def _encoded(picture: Image.Image, kind: str) -> bytes:
    # A new image holds no EXIF, ICC or text chunks: nothing is copied over.
    clean = Image.new(picture.mode, picture.size)
    clean.paste(picture)
    out = io.BytesIO()
    if kind == "JPEG":
        clean.save(out, "JPEG", quality=88, optimize=True)
    else:
        clean.save(out, "PNG", optimize=True)
    return out.getvalue()


def not_matching(name: str, expected: str) -> Refused:
    return Refused(
        f"{name} is not a {expected} image: its content does not match its extension.",
        415,
    )


def bomb(name: str) -> Refused:
    return Refused(
        f"{name} has too many pixels to open safely (a decompression bomb?). "
        "Attach a smaller image.",
    )
