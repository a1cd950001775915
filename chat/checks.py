"""System checks for settings that are fine in development and unsafe in production."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Warning, register

from chat.live.protocol import frames


@register()
def settings_check(app_configs: Any, **kwargs: Any) -> list[Warning | Error]:
    problems: list[Warning | Error] = []
    if frames.max_frame_bytes() > frames.DAPHNE_MAX_MESSAGE_BYTES:
        problems.append(
            Warning(
                f"MESSAGE_MAX_CHARS={settings.MESSAGE_MAX_CHARS} allows WebSocket "
                "messages larger than Daphne accepts by default (1 MiB): Daphne "
                "would close the socket of a user who sends one.",
                hint="Start Daphne with --websocket-max-message-size "
                f"{frames.max_frame_bytes()} --websocket-max-frame-size "
                f"{frames.max_frame_bytes()} (`manage.py runsite` does).",
                id="chat.W002",
            )
        )
    if settings.DEBUG:
        return problems
    layer = settings.CHANNEL_LAYERS["default"]["BACKEND"]
    if layer == "channels.layers.InMemoryChannelLayer":
        problems.append(
            Warning(
                "The in-memory channel layer is in use with DEBUG off.",
                hint="Set REDIS_URL so tabs, share viewers and stop reach every "
                "Daphne process.",
                id="chat.W001",
            )
        )
    if "*" in settings.ALLOWED_HOSTS:
        problems.append(
            Warning(
                "ALLOWED_HOSTS contains '*' with DEBUG off: any Host header is "
                "accepted, so links the site builds (password resets, redirects) "
                "can point at an attacker's host.",
                hint="List the host names the site is served under.",
                id="chat.W003",
            )
        )
    for name in ("HEALTH_TOKEN", "METRICS_TOKEN"):
        weakness = token_weakness(getattr(settings, name))
        if weakness:
            problems.append(
                Warning(
                    f"{name} {weakness}: anyone could guess it.",
                    hint='Set it to python3 -c "import secrets; '
                    'print(secrets.token_urlsafe(32))", or leave it unset.',
                    id="chat.W004",
                )
            )
    if settings.SECRET_KEY == settings.DEV_SECRET_KEY:
        problems.append(
            Error(
                "SECRET_KEY is the development key and DEBUG is off.",
                hint="Set SECRET_KEY to a long random value.",
                id="chat.E001",
            )
        )
    return problems


# Words of a value copied from an example rather than generated
# (deploy/env.example says "replace-with-...").
PLACEHOLDER_WORDS = ("replace", "change", "example", "placeholder", "secret", "token")


def token_weakness(token: str) -> str:
    """Why a bearer token is guessable ("" when it is unset or looks random)."""
    if not token:
        return ""
    lowered = token.lower()
    if any(word in lowered for word in PLACEHOLDER_WORDS):
        return "is a placeholder"
    if len(token) < 16:
        return "is shorter than 16 characters"
    if len(set(token)) < 8:
        return "repeats a few characters"
    return ""


# ---- LDAP sign-in (chat.accounts.ldap; README, "Sign-in with LDAP or Active
# Directory"): settings that would fail at every sign-in, or leak passwords.
@register()
def ldap_check(app_configs: Any, **kwargs: Any) -> list[Warning | Error]:
    urls = settings.LDAP_AUTH_URL
    if not urls:
        return []
    problems: list[Warning | Error] = []
    if not settings.LDAP_AUTH_SEARCH_BASE:
        problems.append(
            Error(
                "CHATSITE_LDAP_URL is set but CHATSITE_LDAP_SEARCH_BASE is empty: "
                "no one could sign in with the directory.",
                hint="Set it to the entry above the people, e.g. "
                "ou=people,dc=example,dc=org.",
                id="chat.E110",
            )
        )
    if bool(settings.LDAP_AUTH_CONNECTION_USERNAME) != bool(
        settings.LDAP_AUTH_CONNECTION_PASSWORD
    ):
        problems.append(
            Error(
                "Only one of CHATSITE_LDAP_BIND_DN and CHATSITE_LDAP_BIND_PASSWORD "
                "is set.",
                hint="Set both (a service account to search as), or neither.",
                id="chat.E111",
            )
        )
    in_clear = [u for u in urls if not u.lower().startswith("ldaps://")]
    if in_clear and not settings.LDAP_AUTH_USE_TLS and not settings.DEBUG:
        problems.append(
            Warning(
                "Passwords go to the directory unencrypted: "
                + ", ".join(in_clear)
                + " without StartTLS.",
                hint="Set CHATSITE_LDAP_START_TLS=true, or use ldaps:// URLs.",
                id="chat.W110",
            )
        )
    return problems


# ---- end of LDAP
