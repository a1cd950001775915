"""Sign-ins, failed sign-ins and sign-outs into the audit log, whichever way
the person signed in (Django's own signals: every backend and both sign-in
pages, the site's and the admin's, send them). Connected in `chat.apps`."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.signals import (
    user_logged_in,
    user_logged_out,
    user_login_failed,
)
from django.http import HttpRequest

from chat.http.client_address import client_address
from chat.models import AuditEvent

# A backend's dotted path → the method the log names ("password" otherwise).
METHODS = {"oidc": "oidc", "ldap": "ldap"}


def refusal_recorded(request: HttpRequest | None) -> None:
    """Tell `sign_in_failed` that this request's failure is in the log already:
    a backend calls it after `provisioning.provision` refused (and recorded,
    with the reason) a username and password sign-in, such as LDAP's, whose
    `authenticate` then fails and sends `user_login_failed` too."""
    if request is not None:
        setattr(request, _RECORDED, True)


_RECORDED = "_chat_sign_in_failure_recorded"


def method_of(backend: str) -> str:
    name = backend.casefold()
    return next((m for key, m in METHODS.items() if key in name), "password")


def _address(request: HttpRequest | None) -> str:
    return client_address(request) if request is not None else ""


def _backend(request: HttpRequest | None, user: Any) -> str:
    # `authenticate` tags the user with its backend; `login` stores it in the
    # session, so a sign-out still knows how its session began.
    backend = getattr(user, "backend", "")
    if not backend and request is not None and hasattr(request, "session"):
        backend = request.session.get(BACKEND_SESSION_KEY, "")
    return str(backend or "")


def signed_in(sender: Any, request: HttpRequest | None, user: Any, **_: Any) -> None:
    AuditEvent.record(
        AuditEvent.Kind.SIGN_IN,
        actor=user,
        subject=user,
        address=_address(request),
        method=method_of(_backend(request, user)),
    )


def signed_out(
    sender: Any, request: HttpRequest | None, user: Any = None, **_: Any
) -> None:
    if user is None:  # a sign-out with no one signed in
        return
    AuditEvent.record(
        AuditEvent.Kind.SIGN_OUT,
        actor=user,
        subject=user,
        address=_address(request),
        method=method_of(_backend(request, user)),
    )


def sign_in_failed(
    sender: Any,
    credentials: dict[str, Any],
    request: HttpRequest | None = None,
    reason: str = "",
    **_: Any,
) -> None:
    # Only a username and password form names who tried; a provider's refusal
    # is recorded, with its reason, by `chat.accounts.provisioning`.
    username = credentials.get("username")
    if not isinstance(username, str) or "password" not in credentials:
        return
    if getattr(request, _RECORDED, False):
        return
    AuditEvent.record(
        AuditEvent.Kind.SIGN_IN_FAILED,
        username=username,
        address=_address(request),
        method="password",
        **({"reason": reason} if reason else {}),
    )


def connect() -> None:
    user_logged_in.connect(signed_in, dispatch_uid="chat.audit.signed_in")
    user_logged_out.connect(signed_out, dispatch_uid="chat.audit.signed_out")
    user_login_failed.connect(sign_in_failed, dispatch_uid="chat.audit.failed")
