"""Making and revoking one's API keys, from the user page's section
(`templates/chat/_api_keys.html`). With htmx the section is answered alone and
swapped in place; without, the whole page. A new key is in that one answer
only (never cached); the key's rules and audit are on `chat.models.ApiKey`."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from chat.http.client_address import client_address
from chat.http.requests import SignedInRequest
from chat.models import ApiKey
from chat.web.account.api_key_forms import ApiKeyForm, api_closed, api_keys_section
from chat.web.account.views import account_page


def _answer(
    request: SignedInRequest, *, status: int = 200, **section: Any
) -> HttpResponse:
    context = api_keys_section(request, **section)
    if request.htmx:
        return render(request, "chat/_api_keys.html", context, status=status)
    return account_page(request, api_keys=context, status=status)


@login_required
@require_POST
@never_cache
def create_api_key(request: SignedInRequest) -> HttpResponse:
    if api_closed(request.user):
        # The page offers no form then: this one was loaded before it closed.
        return _answer(request, status=403)
    form = ApiKeyForm(request.POST, user=request.user)
    if not form.is_valid():
        return _answer(request, form=form, status=422)
    new = ApiKey.issue(
        request.user,
        form.cleaned_data["name"],
        expires_at=form.expires_at(),
        profiles=list(form.cleaned_data["profiles"]),
        store_conversations=form.cleaned_data["store_conversations"],
        actor=request.user,
        address=client_address(request),
    )
    return _answer(request, new=new)


@login_required
@require_POST
def revoke_api_key(request: SignedInRequest, pk: int) -> HttpResponse:
    # Someone else's key is a 404, like someone else's conversation.
    api_key = get_object_or_404(ApiKey, pk=pk, user=request.user)
    revoked = api_key.revoke(actor=request.user, address=client_address(request))
    notice = (
        _("“%(name)s” is revoked: it is refused from now on.") % {"name": api_key.name}
        if revoked
        else _("“%(name)s” was already revoked.") % {"name": api_key.name}
    )
    if request.htmx:
        return _answer(request, notice=notice)
    messages.success(request, notice)
    return redirect("account")
