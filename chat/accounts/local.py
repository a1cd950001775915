"""Local usernames and passwords: Django's own `ModelBackend`, which
`CHATSITE_LOCAL_SIGNIN` can switch off for the site's sign-in page.

Switched off, the password form may still be shown when LDAP is configured (the
directory checks those passwords, `chat.accounts.ldap`), but no local password
signs in there (`chat.accounts.throttle.ThrottledAuthenticationForm`). The admin's
sign-in page still takes local passwords, so staff keep a way in while the
identity provider is down (README, "Sign-in"). The backend itself stays
Django's, so sessions signed in before keep working.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

LOCAL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def password_form_shown() -> bool:
    """Whether the site's sign-in page shows its username and password form."""
    return bool(settings.CHATSITE_LOCAL_SIGNIN or settings.LDAP_AUTH_URL)


def local_password_refused(user: Any) -> bool:
    """`user` was signed in by a local password while those are switched off."""
    return not settings.CHATSITE_LOCAL_SIGNIN and user.backend == LOCAL_BACKEND
