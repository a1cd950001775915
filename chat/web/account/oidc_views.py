"""The OpenID Connect sign-in pages: the start (to the provider, with PKCE),
the callback (back from it), and one page saying why a sign-in failed. The
flow itself is mozilla-django-oidc's; `chat.accounts.oidc` is its seam.

The callback refuses, before the provider is asked anything, a state this
browser never started or already used (a replay) and one older than
`OIDC_STATE_MAX_AGE` (mozilla-django-oidc keeps states until 50 newer ones
push them out, and would accept them however old).
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from chat.accounts import oidc
from chat.http.client_address import client_address
from chat.models import AuditEvent

STATE_UNKNOWN = _(
    "This sign-in was already completed or was started in another browser, so "
    "it cannot be used again. Start again from the sign-in page."
)
STATE_EXPIRED = _(
    "This sign-in took too long and has expired. Start again from the sign-in page."
)
PROVIDER_REFUSED = _("The sign-in service ({name}) did not sign you in{detail}.")
NOT_SIGNED_IN = _("You were not signed in. Start again from the sign-in page.")


def failed(request: HttpRequest, failure: oidc.SignInFailed) -> HttpResponse:
    if not failure.audited:
        AuditEvent.record(
            AuditEvent.Kind.SIGN_IN_FAILED,
            address=client_address(request),
            method="oidc",
            reason=str(failure),
        )
    return render(
        request,
        "registration/oidc_failed.html",
        {
            "message": str(failure),
            "provider_name": oidc.provider_name(),
            "local_signin": settings.CHATSITE_LOCAL_SIGNIN,
        },
        status=failure.status,
    )


class _Start(OIDCAuthenticationRequestView):  # type: ignore[misc]
    get_settings = staticmethod(oidc.setting)


class _Callback(OIDCAuthenticationCallbackView):  # type: ignore[misc]
    get_settings = staticmethod(oidc.setting)

    def login_failure(self) -> HttpResponse:
        raise oidc.SignInFailed(str(NOT_SIGNED_IN))


@never_cache
def start(request: HttpRequest) -> HttpResponse:
    if not oidc.enabled():
        raise Http404
    try:
        oidc.discover()
        response: HttpResponse = _Start.as_view()(request)
    except oidc.SignInFailed as failure:
        return failed(request, failure)
    return response


@never_cache
def callback(request: HttpRequest) -> HttpResponse:
    if not oidc.enabled():
        raise Http404
    try:
        _check_state(request)
        response: HttpResponse = _Callback.as_view()(request)
    except oidc.SignInFailed as failure:
        return failed(request, failure)
    except SuspiciousOperation:
        return failed(request, oidc.SignInFailed(str(STATE_UNKNOWN)))
    return response


def _check_state(request: HttpRequest) -> None:
    state = request.GET.get("state", "")
    states: Any = request.session.get("oidc_states")
    entry = states.get(state) if isinstance(states, dict) else None
    if entry is None:
        raise oidc.SignInFailed(str(STATE_UNKNOWN))
    if time.time() - float(entry.get("added_on", 0)) > settings.OIDC_STATE_MAX_AGE:
        del states[state]
        request.session.modified = True
        raise oidc.SignInFailed(str(STATE_EXPIRED))
    if request.GET.get("error"):
        # The provider said no (the person cancelled, is unknown there, ...):
        # its state is used up like any other.
        del states[state]
        request.session.modified = True
        detail = str(request.GET.get("error_description") or request.GET["error"])
        raise oidc.SignInFailed(
            PROVIDER_REFUSED.format(
                name=oidc.provider_name(), detail=f" ({detail.rstrip('.')})"
            )
        )
