"""Pictures: opened by Pillow only after their header is checked (the format
must be the one the name says, and not too many pixels to decode), then turned
upright from their EXIF orientation, stripped of metadata (only pixels are
copied to the new file), downscaled to the model's limit and re-encoded."""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from django.utils.translation import gettext as _
from PIL import Image, ImageOps, UnidentifiedImageError

from chat.files.refusals import Refused

THUMBNAIL_SIDE = 320


@dataclass(frozen=True)
class Normalised:
    data: bytes
    content_type: str
    thumbnail: bytes


def pixels(name: str, data: bytes, expected: str, max_pixels: int) -> int:
    """How many pixels the picture decodes to, read from its header only (no
    pixel is decoded); refused when it is not what its name says or has more
    than `max_pixels`."""
    width, height = _opened(name, data, expected, max_pixels).size
    return width * height


def _opened(name: str, data: bytes, expected: str, max_pixels: int) -> Image.Image:
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
    return image


def normalised(
    name: str, data: bytes, expected: str, max_pixels: int, max_side: int
) -> Normalised:
    """The picture upright, without metadata, at most `max_side` a side.

    Decoded at full size once, and only once: a JPEG is decoded already
    scaled down (`draft`), turned upright in place, then scaled down before
    any other copy is made (a square box: the same before or after turning),
    so a 49-megapixel picture costs about its decoded size, not four times it.
    """
    image = _opened(name, data, expected, max_pixels)
    keeps_alpha = image.mode in ("RGBA", "LA", "PA") or (
        image.mode == "P" and "transparency" in image.info
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            if image.format in ("JPEG", "MPO"):
                image.draft("RGB", (max_side, max_side))
            image.load()
            ImageOps.exif_transpose(image, in_place=True)
        except (OSError, ValueError, Image.DecompressionBombWarning):
            raise Refused(
                _("%(name)s could not be read: the image is damaged or cut short.")
                % {"name": name}
            ) from None
    mode = "RGBA" if keeps_alpha else "RGB"
    picture = image if image.mode == mode else image.convert(mode)
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
        _(
            "%(name)s is not a %(format)s image: its content does not match its "
            "extension."
        )
        % {"name": name, "format": expected},
        415,
    )


def bomb(name: str) -> Refused:
    return Refused(
        _(
            "%(name)s has too many pixels to open safely (a decompression bomb?). "
            "Attach a smaller image."
        )
        % {"name": name},
    )
