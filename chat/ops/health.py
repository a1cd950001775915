"""`GET /healthz`: can this process serve? For load balancers and monitoring.

Checks the database, the channel layer and every enabled model server at once,
within `DEADLINE` seconds even when all of them hang. The answer is 200 when the
process can serve ("ok", or "degraded" when a model server is away: history still
loads) and 503 when the database or the channel layer fails ("failing": take the
process out). Anonymous callers see only booleans; staff, or a caller sending
`Authorization: Bearer <HEALTH_TOKEN>`, also see latencies, versions, errors and
model-server URLs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from channels.layers import BaseChannelLayer, get_channel_layer
from django.conf import settings
from django.db import connections
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from chat.live.engine.server_status import (
    MODEL_SERVER_TIMEOUT,
    check_model_server,
    failure,
)
from chat.live.protocol.channel_events import HealthPing
from chat.models import ModelProfile

logger = logging.getLogger(__name__)

DATABASE_TIMEOUT = 1.0
CHANNEL_LAYER_TIMEOUT = 1.0
DEADLINE = 2.5  # everything, below the 3 s a proxy typically allows a check

# The database work runs on these threads, not on the request's thread-sensitive
# one: a hung query there would also hold up the middleware's response path. Two
# threads bound what hung queries can pin; later checks then time out ("failing").
# Per process, not per event loop (threads serve any loop), so it stays here
# rather than in `chat.live.engine.loop_state`; its one owner is this module.
_db_executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="healthz-db")


def _new_db_executor() -> None:
    # A forked child inherits the executor but not its threads: work would wait
    # forever for threads that the executor thinks it has.
    global _db_executor
    _db_executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="healthz-db")


os.register_at_fork(after_in_child=_new_db_executor)

Check = dict[str, Any]
T = TypeVar("T")


@require_safe
@never_cache
async def healthz(request: HttpRequest) -> JsonResponse:
    token_ok = _bearer_token_ok(request)
    (database, model_servers, is_staff), channel_layer = await asyncio.gather(
        _check_database_and_model_servers(request, need_user=not token_ok),
        _check_channel_layer(),
    )
    checks = {
        "database": database,
        "channel_layer": channel_layer,
        "model_servers": model_servers,
    }
    if not (database["ok"] and channel_layer["ok"]):
        status, http_status = "failing", 503
    elif not model_servers["ok"]:
        status, http_status = "degraded", 200
    else:
        status, http_status = "ok", 200
    if not (token_ok or is_staff):
        checks = {name: {"ok": check["ok"]} for name, check in checks.items()}
    return JsonResponse({"status": status, "checks": checks}, status=http_status)


async def _check_database_and_model_servers(
    request: HttpRequest, *, need_user: bool
) -> tuple[Check, Check, bool]:
    """Return both checks and whether the caller is staff."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    database, servers, is_staff = await _check_database(request, need_user=need_user)
    if not database["ok"]:  # the model servers' addresses are in the database
        return database, {"ok": False, "error": "not checked: no database"}, False
    budget = deadline - loop.time()
    return database, await _check_model_servers(servers, budget), is_staff


def _bearer_token_ok(request: HttpRequest) -> bool:
    return bearer_token_matches(request, settings.HEALTH_TOKEN)


def bearer_token_matches(request: HttpRequest, expected: str) -> bool:
    """Whether the request sends `Authorization: Bearer <expected>` (never when
    `expected` is empty)."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if not expected or scheme.lower() != "bearer":
        return False
    return secrets.compare_digest(given.strip().encode(), expected.encode())


async def _timed(awaitable: Awaitable[T], limit: float) -> tuple[T, float]:
    """Return the result and the milliseconds it took; raise `TimeoutError`."""
    start = time.perf_counter()
    result = await asyncio.wait_for(awaitable, max(limit, 0.01))
    return result, round((time.perf_counter() - start) * 1000, 1)


async def _check_database(
    request: HttpRequest, *, need_user: bool
) -> tuple[Check, list[tuple[str, str]], bool]:
    """Return the check, the enabled model servers and whether the caller is staff."""
    work = sync_to_async(_database_work, thread_sensitive=False, executor=_db_executor)
    try:
        (servers, is_staff), ms = await _timed(
            work(request, need_user), DATABASE_TIMEOUT
        )
    except Exception as exc:  # any failure of the database is the answer itself
        logger.warning("health: database check failed: %r", exc)
        return {"ok": False, "error": failure(exc, DATABASE_TIMEOUT)}, [], False
    return {"ok": True, "ms": ms}, servers, is_staff


def _database_work(
    request: HttpRequest, need_user: bool
) -> tuple[list[tuple[str, str]], bool]:
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        profiles = ModelProfile.objects.filter(enabled=True).order_by("base_url")
        addresses = profiles.values_list("base_url", "backend").distinct()
        servers = list(dict.fromkeys((u.rstrip("/"), kind) for u, kind in addresses))
        # The session and user are read here too, so that a hung database
        # cannot stall the request beyond the deadline.
        is_staff = need_user and bool(getattr(request.user, "is_staff", False))
        return servers, is_staff
    finally:
        # This thread is not a request's: nothing else would close its connection.
        connections.close_all()


async def _check_channel_layer() -> Check:
    layer = get_channel_layer()
    if layer is None:
        return {"ok": False, "error": "no channel layer is configured"}
    try:
        _, ms = await _timed(_round_trip(layer), CHANNEL_LAYER_TIMEOUT)
    except Exception as exc:  # a broken layer is the answer itself
        logger.warning("health: channel layer check failed: %r", exc)
        return {"ok": False, "error": failure(exc, CHANNEL_LAYER_TIMEOUT)}
    return {"ok": True, "ms": ms, "backend": type(layer).__name__}


async def _round_trip(layer: BaseChannelLayer) -> None:
    channel = await layer.new_channel()
    nonce = secrets.token_hex(8)
    ping: HealthPing = {"type": "health.ping", "nonce": nonce}
    await layer.send(channel, dict(ping))
    message = await layer.receive(channel)
    if message.get("nonce") != nonce:
        raise RuntimeError("the channel layer returned a different message")


async def _check_model_servers(servers: list[tuple[str, str]], budget: float) -> Check:
    timeout = min(MODEL_SERVER_TIMEOUT, budget)
    results = await asyncio.gather(
        *(check_model_server(url, backend, timeout) for url, backend in servers)
    )
    return {"ok": all(result["ok"] for result in results), "servers": results}


# Included by `chatsite.urls` at "healthz".
urlpatterns = [path("", healthz, name="healthz")]
