"""Sign-in throttling: failed attempts are counted per username *from one client
address*, and per client address, in Django's cache (Redis when REDIS_URL is
set, so every process counts the same failures). Past the limit, sign-in is
refused, even with the right password, until the window that began with the
first failure ends. While the
cache is unreachable, attempts are neither counted nor refused (logged): an
outage of Redis must not lock everyone out.

A username is counted per address, not across all of them: otherwise anyone
could keep a colleague locked out by failing with their username on purpose.
Guessing one password from many addresses is still slowed by the per-address
limits (each address gets its few tries per username, and its overall budget).

Used by the site's sign-in page and the admin's (see chat.admin).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpRequest, HttpResponse
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

THROTTLED = "throttled"


@contextmanager
def _unless_cache_away() -> Iterator[None]:
    try:
        yield
    except (RedisError, OSError):
        logger.warning("the cache is unreachable: sign-in failures are not counted")


def _counters(request: HttpRequest | None, username: str) -> list[tuple[str, int]]:
    """(cache key, failures allowed): this username from this address first,
    then this address whatever the username."""
    address = (request.META.get("REMOTE_ADDR") if request is not None else "") or ""
    name = hashlib.sha256(
        f"{username.strip().casefold()}\0{address}".encode()
    ).hexdigest()
    counters = [(f"signin-failures:user:{name}", settings.SIGNIN_FAILURES_PER_USERNAME)]
    if address:
        counters.append(
            (f"signin-failures:addr:{address}", settings.SIGNIN_FAILURES_PER_ADDRESS)
        )
    return counters


def is_throttled(request: HttpRequest | None, username: str) -> bool:
    counters = _counters(request, username)
    counts: dict[str, Any] = {}
    with _unless_cache_away():
        counts = cache.get_many([key for key, _ in counters])
    return any(counts.get(key, 0) >= limit for key, limit in counters)


def record_failure(request: HttpRequest | None, username: str) -> None:
    for key, _ in _counters(request, username):
        with _unless_cache_away():
            _count(key)


def _count(key: str) -> None:
    # The window starts with the first failure and is not extended by later ones.
    cache.add(key, 0, timeout=settings.SIGNIN_LOCKOUT_SECONDS)
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=settings.SIGNIN_LOCKOUT_SECONDS)


def forget_failures(request: HttpRequest | None, username: str) -> None:
    """After a successful sign-in; the address's count stays (one account of an
    attacker's own must not reset it)."""
    key, _ = _counters(request, username)[0]
    with _unless_cache_away():
        cache.delete(key)


class ThrottledSignInMixin:
    """For an AuthenticationForm: refuse while throttled, count failures."""

    request: HttpRequest | None
    cleaned_data: dict[str, Any]

    def clean(self) -> dict[str, Any]:
        username = str(self.cleaned_data.get("username") or "")
        if is_throttled(self.request, username):
            minutes = max(1, round(settings.SIGNIN_LOCKOUT_SECONDS / 60))
            raise ValidationError(
                "Too many failed sign-in attempts. Wait %(minutes)d minutes, "
                "then try again.",
                code=THROTTLED,
                params={"minutes": minutes},
            )
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except ValidationError:
            record_failure(self.request, username)
            raise
        forget_failures(self.request, username)
        return cleaned


class ThrottledAuthenticationForm(ThrottledSignInMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledSignInMixin, AdminAuthenticationForm):
    pass


class SignInView(LoginView):
    form_class = ThrottledAuthenticationForm

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        if form.has_error(NON_FIELD_ERRORS, THROTTLED):
            response.status_code = 429
        return response
