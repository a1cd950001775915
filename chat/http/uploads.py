"""A file uploaded in a form, read by Django under its limit: to a temporary
file, never into memory, stopped once the file passes the limit (the body
around it is held to the limit and the form's overhead before it is read,
`chat.http.request_bodies`), its CSRF token checked once the upload handler
is set. For the import and an attachment's upload alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.core.files.uploadhandler import StopUpload, TemporaryFileUploadHandler
from django.http import HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.datastructures import MultiValueDict
from django.utils.translation import gettext as _

# What a form adds around the file: boundaries, headers, the CSRF token.
FORM_OVERHEAD = 64 * 1024


class LimitedUpload(TemporaryFileUploadHandler):
    """Django's upload to a temporary file (never into memory), stopped once
    the file passes its limit: the body is held to the limit and the form
    around it (`chat.http.request_bodies`), the file to the limit itself."""

    too_large = False
    limit_setting = "TRANSFER_IMPORT_MAX_BYTES"

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        if start + len(raw_data) > getattr(settings, self.limit_setting):
            self.too_large = True
            raise StopUpload(connection_reset=True)
        return super().receive_data_chunk(raw_data, start)


def uploaded_files(
    request: HttpRequest, refuse: Callable[[str, int], HttpResponse]
) -> HttpResponse | MultiValueDict[str, Any]:
    """An upload's form read (by the request's upload handlers) and its CSRF
    token checked: the files, or the refusal, the CSRF check's 403 or
    `refuse(message, 400)` for a form Django cannot read (a part's headers
    over its 1,024 bytes: a file name of thousands of characters; too many
    fields or files). For the import and an attachment's upload alike."""
    try:
        # (`_no_view`, not the view: the check skips views marked csrf_exempt.)
        refused = CsrfViewMiddleware(_no_view).process_view(request, _no_view, (), {})
        return refused if refused is not None else request.FILES
    except (MultiPartParserError, SuspiciousOperation):
        message = _(
            "The upload could not be read. If the file's name is very long, "
            "rename the file and try again."
        )
        return refuse(message, 400)


def _no_view(request: HttpRequest) -> HttpResponse:
    raise AssertionError("the CSRF check only decides")  # never called
