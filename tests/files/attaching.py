"""Uploads made in tests the way the upload view makes them: checked and read
by `chat.files`, kept by `chat.web.attachments.store`."""

from __future__ import annotations

from django.conf import settings

from chat.files.uploads import Limits, prepare
from chat.web.conversations.attachments import store


def attach(owner, name: str, data: bytes, conversation=None, profile=None):
    limits = Limits(
        max_bytes=settings.ATTACHMENT_MAX_BYTES,
        max_pixels=settings.ATTACHMENT_MAX_PIXELS,
        image_max_side=1568,
    )
    return store(owner, prepare(name, data, limits), conversation, profile)
