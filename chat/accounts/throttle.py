"""Sign-in throttling: failed attempts are counted per username *from one client
address*, and per client address, in Django's cache (Redis when REDIS_URL is
set, so every process counts the same failures). Past the limit, sign-in is
refused, even with the right password, until the window that began with the
first failure ends. Each attempt is counted before its password is checked
(one atomic increment per count), and given back if it succeeds: attempts sent
at once cannot all be checked against a count that none of them has raised yet.
While the cache is unreachable, attempts are neither counted nor refused
(logged): an outage of Redis must not lock everyone out.

The client address is the connection's peer, or behind our own proxies the
address they name (chat.http.client_address, `TRUSTED_PROXIES`): a client cannot
switch the per-address limits off by sending `X-Forwarded-For` itself.

A username is counted per address, not across all of them: otherwise anyone
could keep a colleague locked out by failing with their username on purpose.
Guessing one password from many addresses is still slowed by the per-address
limits (each address gets its few tries per username, and its overall budget).

Used by the site's sign-in page (`chat.web.account.signin`) and the admin's
(see chat.admin).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.signals import user_login_failed
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from redis.exceptions import RedisError

from chat.accounts.local import local_password_refused
from chat.http.client_address import client_address

logger = logging.getLogger(__name__)

THROTTLED = "throttled"
# The code of a backend's ValidationError when the password could not be
# checked at all (chat.accounts.ldap: the directory does not answer): such an
# attempt is given back, or an outage would lock everyone out after it.
NOT_CHECKED = "not_checked"


@contextmanager
def _unless_cache_away() -> Iterator[None]:
    try:
        yield
    except (RedisError, OSError):
        logger.warning("the cache is unreachable: sign-in failures are not counted")


def _counters(request: HttpRequest | None, username: str) -> list[tuple[str, int]]:
    """(cache key, failures allowed): this username from this address first,
    then this address whatever the username."""
    address = client_address(request) if request is not None else ""
    name = hashlib.sha256(
        f"{username.strip().casefold()}\0{address}".encode()
    ).hexdigest()
    counters = [(f"signin-failures:user:{name}", settings.SIGNIN_FAILURES_PER_USERNAME)]
    if address:
        counters.append(
            (f"signin-failures:addr:{address}", settings.SIGNIN_FAILURES_PER_ADDRESS)
        )
    return counters


class Attempt:
    """One sign-in attempt, counted as a failure *before* its password is
    checked: the count is taken with one atomic increment per counter, so of
    any number of attempts at once only those within the limits get their
    password checked. A successful attempt gives its counts back."""

    def __init__(self, request: HttpRequest | None, username: str) -> None:
        self.counters = _counters(request, username)
        self.taken: list[str] = []
        self.refused = False
        for key, limit in self.counters:
            with _unless_cache_away():
                count = _count(key)
                self.taken.append(key)
                self.refused = self.refused or count > limit

    def given_back(self) -> None:
        """The password was not checked: this attempt counts for nothing."""
        for key in self.taken:
            with _unless_cache_away(), suppress(ValueError):  # (expired since)
                cache.decr(key)

    def succeeded(self) -> None:
        """Forget the username's failures; the address's count stays (one
        account of an attacker's own must not reset it), less this attempt."""
        for index, key in enumerate(self.taken):
            with _unless_cache_away(), suppress(ValueError):  # (expired since)
                if index == 0:
                    cache.delete(key)
                else:
                    cache.decr(key)


def _count(key: str) -> int:
    """Add one to the count at `key`, atomically (Redis INCR; the local
    memory cache increments under its lock). The window starts with the first
    failure and is not extended by later ones."""
    cache.add(key, 0, timeout=settings.SIGNIN_LOCKOUT_SECONDS)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 0, timeout=settings.SIGNIN_LOCKOUT_SECONDS)
        count = cache.incr(key)
    if count == 1:
        # Redis' INCR recreates a key that expired after Django's existence
        # check, without an expiry: give the window back to it.
        cache.touch(key, timeout=settings.SIGNIN_LOCKOUT_SECONDS)
    return int(count)


def too_many_failures() -> ValidationError:
    """The refusal while throttled (also of the password change's old
    password, `chat.web.account.views`: checking it is a guess like any other)."""
    minutes = max(1, round(settings.SIGNIN_LOCKOUT_SECONDS / 60))
    return ValidationError(
        _(
            "Too many failed sign-in attempts. Wait %(minutes)d minutes, "
            "then try again."
        ),
        code=THROTTLED,
        params={"minutes": minutes},
    )


class ThrottledSignInMixin:
    """For an AuthenticationForm: refuse while throttled, count failures."""

    request: HttpRequest | None
    cleaned_data: dict[str, Any]

    def clean(self) -> dict[str, Any]:
        username = str(self.cleaned_data.get("username") or "")
        if not (username and self.cleaned_data.get("password")):
            return super().clean()  # type: ignore[misc,no-any-return]
        attempt = Attempt(self.request, username)
        if attempt.refused:
            # Audited as a failed sign-in (chat.accounts.signals), with why.
            user_login_failed.send(
                sender=__name__,
                credentials={"username": username, "password": "********"},
                request=self.request,
                reason=THROTTLED,
            )
            raise too_many_failures()
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except ValidationError as error:
            if getattr(error, "code", None) == NOT_CHECKED:
                attempt.given_back()
            raise
        attempt.succeeded()
        return cleaned


class ThrottledAuthenticationForm(ThrottledSignInMixin, AuthenticationForm):
    """The site's sign-in form: with local passwords switched off, a local
    password is refused as a wrong one (the admin's form still takes it)."""

    def confirm_login_allowed(self, user: Any) -> None:
        if local_password_refused(user):
            raise self.get_invalid_login_error()
        super().confirm_login_allowed(user)


class ThrottledAdminAuthenticationForm(ThrottledSignInMixin, AdminAuthenticationForm):
    pass
