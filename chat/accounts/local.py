"""Local usernames and passwords: Django's own check, which
`CHATSITE_LOCAL_SIGNIN` can switch off for the site's sign-in page.

Switched off, the password form may still be shown when LDAP is configured (the
directory checks those passwords, `chat.accounts.ldap`), but no local password
signs in there. The admin's sign-in page still takes local passwords, so staff
keep a way in while the identity provider is down (README, "Sign-in").
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest
from django.urls import reverse


def password_form_shown() -> bool:
    """Whether the site's sign-in page shows its username and password form."""
    return bool(settings.CHATSITE_LOCAL_SIGNIN or settings.LDAP_AUTH_URL)


def _admin_sign_in(request: HttpRequest | None) -> bool:
    return request is not None and request.path == reverse("admin:login")


class LocalPasswordBackend(ModelBackend):
    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if not settings.CHATSITE_LOCAL_SIGNIN and not _admin_sign_in(request):
            return None
        return super().authenticate(request, username, password, **kwargs)
