"""The user page's credentials for tool servers (`templates/chat/
_tool_credentials.html`): each enabled server the user may use that takes a
credential (`ToolServer.credential_header`), whether theirs is set, a form
to set or replace it and a button to clear it. The value is never shown
back, nor written to the audit log: only that it was set or cleared, for
which server. With htmx the section is answered alone and swapped in
place; without, the page again."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from chat.http.client_address import client_address
from chat.http.requests import SignedInRequest
from chat.models import AuditEvent, ToolCredential, ToolServer
from chat.web.account.tool_credential_forms import (
    CredentialForm,
    servers_taking_credentials,
    tool_credentials_section,
)
from chat.web.account.views import account_page


def _answer(
    request: SignedInRequest, *, status: int = 200, **section: Any
) -> HttpResponse:
    if request.htmx:
        context = tool_credentials_section(request, **section)
        return render(request, "chat/_tool_credentials.html", context, status=status)
    if section.get("notice"):
        messages.success(request, section["notice"])
    if status == 200:
        return redirect("account")
    return account_page(
        request,
        tool_credentials=tool_credentials_section(request, **section),
        status=status,
    )


def _usable(request: SignedInRequest, pk: int) -> ToolServer:
    """A server the user may give a credential for; any other is a 404."""
    for server in servers_taking_credentials(request.user):
        if server.pk == pk:
            return server
    raise Http404


def _stored(
    request: SignedInRequest, server: ToolServer, value: str, notice: str
) -> HttpResponse:
    """Store (a blank `value`: clear) the user's credential, audit it (the
    server, never the value) and answer with `notice`."""
    ToolCredential.store(request.user, server, value)
    kind = AuditEvent.Kind
    AuditEvent.record(
        kind.TOOL_SECRET_SET if value else kind.TOOL_SECRET_CLEARED,
        actor=request.user,
        subject=request.user,
        address=client_address(request),
        server=server.slug,
    )
    return _answer(request, notice=notice % {"server": server.name})


@login_required
@require_POST
@never_cache
def set_tool_credential(request: SignedInRequest, pk: int) -> HttpResponse:
    server = _usable(request, pk)
    form = CredentialForm(request.POST, auto_id=f"id_credential_{pk}_%s")
    if not form.is_valid():
        return _answer(request, failed=(pk, form), status=422)
    value = form.cleaned_data["value"]
    return _stored(request, server, value, _("Your credential for %(server)s is set."))


@login_required
@require_POST
def clear_tool_credential(request: SignedInRequest, pk: int) -> HttpResponse:
    server = _usable(request, pk)
    notice = _("Your credential for %(server)s is cleared.")
    return _stored(request, server, "", notice)
