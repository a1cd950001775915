"""HTTP helpers both protocols use: JSON answers, timestamps, pacing, sockets."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from aiohttp import web

from chat.simulator.faults import ApiError
from chat.simulator.received import text_of
from chat.simulator.state import ChatLogEntry


@lru_cache(maxsize=4)
def _second_prefix(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def rfc3339(ns: int | None = None) -> str:
    """UTC time in Go's RFC3339Nano form (trailing zeros trimmed), as Ollama sends."""
    seconds, frac = divmod(time.time_ns() if ns is None else ns, 1_000_000_000)
    digits = f"{frac:09d}".rstrip("0")
    suffix = f".{digits}Z" if digits else "Z"
    return _second_prefix(seconds) + suffix


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def json_response(obj: Any, status: int = 200) -> web.Response:
    return web.Response(text=dumps(obj), status=status, content_type="application/json")


def error_response(status: int, message: str) -> web.Response:
    return json_response({"error": message}, status)


def prompt_tokens(messages: Sequence[Any]) -> int:
    # Roughly four characters per token plus a few template tokens per message.
    chars = sum(
        len(text_of(m.get("content", ""))) for m in messages if isinstance(m, dict)
    )
    return max(1, chars // 4 + 4 * len(messages))


async def read_json(request: web.Request) -> Any:
    raw = await request.read()
    if not raw.strip():
        raise ApiError(400, "missing request body")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ApiError(400, f"invalid JSON in request body: {exc}") from exc


@dataclass
class Timing:
    """Clock readings of one chat request, for the done chunk's metrics."""

    start_ns: int
    loaded_ns: int = 0
    first_ns: int = 0
    last_ns: int = 0


async def sleep_until(loop: asyncio.AbstractEventLoop, deadline: float) -> None:
    delay = deadline - loop.time()
    if delay > 0:
        await asyncio.sleep(delay)


def set_nodelay(request: web.Request) -> None:
    # aiohttp already sets TCP_NODELAY on accept; make sure, since the whole
    # point is that each token leaves on its own packet.
    transport = request.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def record_sent(entry: ChatLogEntry, timing: Timing, record_times: bool) -> None:
    """Count a token just written; with ``record_times``, stamp its send time."""
    timing.last_ns = time.perf_counter_ns()
    if not entry.tokens_sent:
        timing.first_ns = timing.last_ns
    entry.tokens_sent += 1
    if record_times:
        entry.times.append(time.time())
