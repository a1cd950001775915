"""What the attachment tests share: an upload posted as the composer posts it,
a request's scope straight to the site's ASGI application, a file's storage
looked at."""

from __future__ import annotations

import io

from django.core.files.storage import default_storage
from django.urls import reverse

from chat.models import Attachment


def named(raw: bytes, name: str):
    file = io.BytesIO(raw)
    file.name = name
    return file


def upload(client, raw: bytes, name: str, **fields):
    return client.post(
        reverse("upload_attachment"), {"file": named(raw, name), **fields}
    )


def asgi_request(
    method: str, path: str, cookie: bytes, *extra: tuple[bytes, bytes]
) -> dict:
    """The scope of a request straight to the site's ASGI application."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"cookie", cookie), *extra],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }


def stored(attachment: Attachment) -> list[bool]:
    return [
        default_storage.exists(name)
        for name in (attachment.storage_name, attachment.thumbnail_name)
        if name
    ]
