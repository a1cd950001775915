"""Uploads made in tests the way the upload view makes them: checked and read
by `chat.files`, kept by `Attachment.store`."""

from __future__ import annotations

from django.conf import settings

from chat import files
from chat.models import Attachment


def attach(owner, name: str, data: bytes, conversation=None, profile=None):
    limits = files.Limits(
        max_bytes=settings.ATTACHMENT_MAX_BYTES,
        max_pixels=settings.ATTACHMENT_MAX_PIXELS,
        image_max_side=1568,
    )
    prepared = files.prepare(name, data, limits)
    return Attachment.store(
        owner,
        name=prepared.name,
        data=prepared.data,
        content_type=prepared.content_type,
        kind=prepared.kind,
        text=prepared.text,
        note=prepared.note,
        thumbnail=prepared.thumbnail,
        sha256=prepared.sha256,
        conversation=conversation,
        profile=profile,
    )
