"""Typed readers for settings taken from the environment; bad values fail loudly."""

from __future__ import annotations

import ipaddress
import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true or false)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str) -> tuple[str, ...]:
    """Comma-separated IP addresses or networks (`10.0.0.0/8`); empty when unset."""
    entries = tuple(env_list(name, []))
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}: {entry!r} is not an IP address or network"
            ) from None
    return entries


def env_url(name: str, default: str, *, schemes: tuple[str, ...]) -> str:
    value = os.environ.get(name, default).strip()
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() not in schemes or not rest:
        allowed = ", ".join(f"{s}://" for s in schemes)
        raise ImproperlyConfigured(f"{name}={value!r} must start with one of {allowed}")
    return value.rstrip("/")


def env_token(name: str, *, min_length: int = 16) -> str:
    """A secret that callers send as a bearer token; empty when unset."""
    value = os.environ.get(name, "").strip()
    if not value:
        return ""
    if len(value) < min_length:
        raise ImproperlyConfigured(
            f"{name} must be at least {min_length} characters long (it is a secret)"
        )
    if any(char.isspace() for char in value):
        raise ImproperlyConfigured(f"{name} must not contain spaces")
    return value
