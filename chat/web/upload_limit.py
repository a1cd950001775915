"""The size limits of uploads (the import, attachments), kept before Django:
Django's ASGI handler reads a request's whole body (into a temporary file)
before any view runs, so a view cannot refuse a 1 GB upload until it has
arrived. This ASGI middleware answers 413 at once when an upload says it is
larger than its limit (`TRANSFER_IMPORT_MAX_BYTES`, `ATTACHMENT_MAX_BYTES`),
and ends one that sends more than the limit without saying so (chunked, or a
length that lies)."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from chat.files import too_large
from chat.web.transfer import FORM_OVERHEAD, too_large_message
from chat.web.transfer_urls import IMPORT_PATH

ATTACHMENTS_PATH = "/attachments/"

Scope = dict[str, Any]
Message = dict[str, Any]
TEXT = b"text/plain; charset=utf-8"


class UploadLimit:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        refusal = _limit(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        limit, body, content_type = refusal
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _refuse(send, body, content_type)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message: Message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # Django stops reading and answers nothing (RequestAborted).
                    return {"type": "http.disconnect"}
            return message

        await self.app(scope, counted, send)


def _limit(scope: Scope) -> tuple[int, bytes, bytes] | None:
    """The limit of an upload to `scope`'s path, with its refusal; None for
    any other request."""
    if scope["type"] != "http" or scope.get("method") != "POST":
        return None
    path = scope.get("path")
    if path == "/" + IMPORT_PATH:
        limit = settings.TRANSFER_IMPORT_MAX_BYTES
        return limit + FORM_OVERHEAD, too_large_message().encode(), TEXT
    if path == ATTACHMENTS_PATH:
        limit = settings.ATTACHMENT_MAX_BYTES
        body = json.dumps({"error": too_large(limit)}).encode()
        return limit + FORM_OVERHEAD, body, b"application/json"
    return None


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(send: Any, body: bytes, content_type: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
