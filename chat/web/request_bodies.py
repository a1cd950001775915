"""What each route takes as a request body, decided from the request line and
headers before a byte of the body is read, and the refusals: one table for
every path. The server applies it while the body streams in
(`chat.sockets.daphne_protocol.BoundedChannel`): Daphne reads a request's whole
body before the application sees the request, so no view or ASGI middleware
could refuse a body in time.

- the import (`chat.web.transfer`) and an attachment's upload
  (`chat.web.attachments`): their file's limit plus the form around it; the
  only routes that take a multipart form, and only with a session cookie (a
  forged one still costs its sender the body, as the view then refuses it);
- the API (/v1/, /api/): `chat.api.requests.max_body_bytes`, refused in each
  dialect's error shape;
- everything else: DATA_UPLOAD_MAX_MEMORY_SIZE, Django's own cap on a form's
  fields; no multipart form.

A body over its route's limit is refused with 413 at the headers when its
Content-Length says so, else once the bytes received pass it (chunked); a
multipart form elsewhere with 415, a signed-out upload with 403, all before
the body is read. deploy/nginx.conf has the same limits per location."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation.trans_real import parse_accept_lang_header

from chat import files
from chat.api.errors import ApiError
from chat.api.requests import max_body_bytes
from chat.files.uploads import mebibytes
from chat.web.transfer import FORM_OVERHEAD, too_large_message
from chat.web.transfer_urls import IMPORT_PATH

ATTACHMENTS_PATH = "/attachments/"
TEXT = b"text/plain; charset=utf-8"
JSON = b"application/json"


@dataclass(frozen=True)
class Refusal:
    status: int
    content_type: bytes
    body: bytes


# A refusal's body in a route's shape: (status, code, message) -> (type, body).
Shape = Callable[[int, str, str], tuple[bytes, bytes]]


def _text(status: int, code: str, message: str) -> tuple[bytes, bytes]:
    return TEXT, message.encode()


def _json(status: int, code: str, message: str) -> tuple[bytes, bytes]:
    return JSON, json.dumps({"error": message}).encode()


def _openai(status: int, code: str, message: str) -> tuple[bytes, bytes]:
    return JSON, json.dumps(ApiError(status, code, message).openai_body()).encode()


def _ollama(status: int, code: str, message: str) -> tuple[bytes, bytes]:
    return JSON, json.dumps(ApiError(status, code, message).ollama_body()).encode()


@dataclass(frozen=True)
class Route:
    limit: int  # bytes of body
    uploads: bool  # takes a multipart form, from a signed-in user only
    shape: Shape
    too_large: Callable[[int], str]  # the limit -> the message
    signed_out: str = ""  # the message to a signed-out upload


def route(path: str) -> Route:
    """The route of `path` (decoded, as Django resolves it)."""
    if path == "/" + IMPORT_PATH:
        return Route(
            settings.TRANSFER_IMPORT_MAX_BYTES + FORM_OVERHEAD,
            True,
            _text,
            lambda limit: too_large_message(),
            _("Sign in to import conversations."),
        )
    if path == ATTACHMENTS_PATH:
        return Route(
            settings.ATTACHMENT_MAX_BYTES + FORM_OVERHEAD,
            True,
            _json,
            lambda limit: files.too_large(settings.ATTACHMENT_MAX_BYTES),
            _("Sign in to attach files."),
        )
    if path.startswith(("/v1/", "/api/")):
        shape = _openai if path.startswith("/v1/") else _ollama
        return Route(max_body_bytes(), False, shape, _api_too_large)
    # None: Django sets no cap; the pages' forms still get one.
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 2_621_440
    return Route(limit, False, _text, _page_too_large)


def _api_too_large(limit: int) -> str:
    # As chat.api.requests.decode says it.
    return f"The request body is over the limit of {limit:,} bytes."


def _page_too_large(limit: int) -> str:
    return _("The request is too large: this address takes at most %(limit)s.") % {
        "limit": mebibytes(limit)
    }


@dataclass(frozen=True)
class Head:
    """What the decision needs of a request's head (raw bytes, as received)."""

    target: bytes  # the request target: path and query
    length: int | None  # Content-Length; None when chunked; 0 without a body
    content_type: bytes = b""
    cookie: bytes = b""
    accept_language: bytes = b""

    @property
    def path(self) -> str:
        """The path as Daphne gives it to Django (its scope's `path`); "" when
        Daphne refuses it (not ASCII)."""
        target = self.target.split(b"?", 1)[0]
        if b"://" in target:  # absolute form: http://host/path
            target = b"/" + target.split(b"://", 1)[1].partition(b"/")[2]
        try:
            return unquote(target.decode("ascii"))
        except UnicodeDecodeError:
            return ""


def at_headers(head: Head) -> Refusal | int:
    """The refusal of a request at its headers (in the reader's language), or
    the limit its body is held to while it is read."""
    with translation.override(_language(head.accept_language)):
        found = route(head.path)
        if head.length == 0:
            return found.limit  # nothing to read
        if head.length is not None and head.length > found.limit:
            return _refusal(
                found, 413, "request_too_large", found.too_large(found.limit)
            )
        kind = head.content_type.split(b";")[0].strip().lower()
        if kind == b"multipart/form-data":
            if not found.uploads:
                message = _("This address takes no file uploads.")
                return _refusal(found, 415, "unsupported_media_type", message)
            if not _has_session(head.cookie):
                return _refusal(found, 403, "not_signed_in", found.signed_out)
        return found.limit


def too_large(head: Head) -> Refusal:
    """413 in the route's shape and the reader's language."""
    with translation.override(_language(head.accept_language)):
        found = route(head.path)
        return _refusal(found, 413, "request_too_large", found.too_large(found.limit))


def _refusal(found: Route, status: int, code: str, message: str) -> Refusal:
    content_type, body = found.shape(status, code, message)
    return Refusal(status, content_type, body)


def _has_session(cookie: bytes) -> bool:
    name = settings.SESSION_COOKIE_NAME.encode()
    for pair in cookie.split(b";"):
        key, _sep, value = pair.strip().partition(b"=")
        if key == name and value:
            return True
    return False


def _language(header: bytes) -> str:
    """The first language of Accept-Language the site speaks (as Django's
    LocaleMiddleware would choose without a session), else LANGUAGE_CODE."""
    for code, _quality in parse_accept_lang_header(header.decode("latin-1")):
        if code == "*":
            break
        try:
            return translation.get_supported_language_variant(code)
        except LookupError:
            continue
    return settings.LANGUAGE_CODE
