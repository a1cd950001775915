"""The composer's attachment limits, for its script (`chat/_composer.html`)."""

from __future__ import annotations

from django import template
from django.conf import settings

from chat.files.uploads import ACCEPTED_EXTENSIONS, IMAGE_EXTENSIONS

register = template.Library()


@register.simple_tag
def attach_limits() -> dict[str, object]:
    return {
        "max_bytes": settings.ATTACHMENT_MAX_BYTES,
        "max_files": settings.ATTACHMENT_MAX_FILES,
        "accept": ",".join(ACCEPTED_EXTENSIONS),
        # Left out of `accept` for a model without vision.
        "image_accept": ",".join(IMAGE_EXTENSIONS),
    }
