"""Exports as HTTP responses: a file to save, and all of a user's
conversations as a ZIP written while it is sent, for the user's own page
(`chat.web.transfer`) and for staff (the user admin's action,
`chat.ops.admin_audit`)."""

from __future__ import annotations

from typing import Any, TypeVar

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils import timezone
from django.utils.http import content_disposition_header

from chat.http.client_address import client_address
from chat.http.streamed import streamed
from chat.models import AuditEvent
from chat.transfer.export import for_export, safe_name, zip_stream

Response = TypeVar("Response", HttpResponse, StreamingHttpResponse)


def attachment(response: Response, name: str) -> Response:
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response


def zip_response(request: HttpRequest, owner: Any) -> StreamingHttpResponse:
    """All of `owner`'s conversations as a ZIP, written while it is sent."""
    response = StreamingHttpResponse(
        streamed(request, zip_stream(owner), reads_database=True),
        content_type="application/zip",
    )
    day = timezone.localdate().isoformat()
    return attachment(response, f"chatsite-{safe_name(owner.get_username())}-{day}.zip")


def staff_export(request: HttpRequest, user: Any) -> StreamingHttpResponse:
    """A user's conversations for staff (the user admin's action), recorded in
    the audit log."""
    AuditEvent.record(
        AuditEvent.Kind.DATA_EXPORTED,
        actor=request.user,
        subject=user,
        address=client_address(request),
        method="admin",
        conversations=for_export(user).count(),
    )
    return zip_response(request, user)
