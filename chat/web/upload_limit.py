"""The import's size limit, kept before Django: Django's ASGI handler reads a
request's whole body (into a temporary file) before any view runs, so a view
cannot refuse a 1 GB upload until it has arrived. This ASGI middleware answers
413 at once when an upload to the import says it is larger than the limit
(`TRANSFER_IMPORT_MAX_BYTES`), and ends one that sends more than the limit
without saying so (chunked, or a length that lies)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from chat.web.transfer import FORM_OVERHEAD, too_large_message
from chat.web.transfer_urls import IMPORT_PATH

Scope = dict[str, Any]
Message = dict[str, Any]


class UploadLimit:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or scope.get("path") != "/" + IMPORT_PATH
        ):
            await self.app(scope, receive, send)
            return
        limit = settings.TRANSFER_IMPORT_MAX_BYTES + FORM_OVERHEAD
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _refuse(send)
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


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(send: Any) -> None:
    body = too_large_message().encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
