"""Who is asking: the request's API key (`Authorization: Bearer <key>`), and
whether it is over its request rate."""

from __future__ import annotations

import time

from channels.db import database_sync_to_async
from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

from chat.api.errors import ApiError
from chat.http.client_address import client_address
from chat.models import ApiKey

RATE_WINDOW_SECONDS = 60


def bearer(request: HttpRequest) -> str:
    """The key in the Authorization header ("" without one)."""
    header = str(request.META.get("HTTP_AUTHORIZATION") or "")
    scheme, _, key = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return ""
    return key.strip()


async def authenticate(request: HttpRequest) -> ApiKey:
    """The request's active key, its user selected; ApiError 401 (no key, a bad,
    revoked or expired one, a switched-off account) or 403 (the API is not open
    to its owner), or 429 over the key's rate."""
    key = bearer(request)
    try:
        ApiKey.screen(key)
        api_key = await database_sync_to_async(ApiKey.authenticate)(
            key, client_address(request)
        )
    except ApiKey.Refused as refused:
        status = 403 if refused.forbidden else 401
        code = "api_forbidden" if refused.forbidden else "invalid_api_key"
        raise ApiError(status, code, str(refused)) from None
    await _count(api_key)
    return api_key


async def _count(api_key: ApiKey) -> None:
    """Raise 429 past `API_REQUESTS_PER_MINUTE` requests of one key in a
    minute (0: no limit), counted in Django's cache (Redis, shared by every
    process, when REDIS_URL is set). A cache that is away counts nothing: the
    queue and the quotas still hold."""
    limit = settings.API_REQUESTS_PER_MINUTE
    if not limit:
        return
    now = time.time()
    window = int(now // RATE_WINDOW_SECONDS)
    name = f"api-rate:{api_key.pk}:{window}"
    try:
        await cache.aadd(name, 0, RATE_WINDOW_SECONDS * 2)
        count = await cache.aincr(name)
    except Exception:
        return
    if count > limit:
        retry = int((window + 1) * RATE_WINDOW_SECONDS - now) + 1
        raise ApiError(
            429,
            "rate_limited",
            f"More than {limit} requests a minute with this key: wait {retry} s.",
            retry_after=retry,
        )
