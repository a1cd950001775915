"""Asking a busy model server again, before anything was streamed.

A server answers 503 while its queue is full or its model loads, and a proxy
in front may answer 429; both become `UpstreamError("upstream_busy")`. Such an
answer comes before the first token, so asking again after a pause costs the
user nothing but the wait. Once the body started there is no retry: the
answer would start over.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
from django.conf import settings

from chat.upstream.events import UpstreamError
from chat.upstream.transport import WRITTEN

# Pauses before the second, third and fourth try; `UPSTREAM_BUSY_RETRY_DELAYS`
# in the settings overrides them.
BUSY_RETRY_DELAYS: tuple[float, ...] = (0.25, 0.5, 1.0)

# A server's `Retry-After` is obeyed up to this many seconds.
MAX_RETRY_AFTER = 10.0


def retry_delays() -> Sequence[float]:
    return tuple(getattr(settings, "UPSTREAM_BUSY_RETRY_DELAYS", BUSY_RETRY_DELAYS))


@asynccontextmanager
async def busy_retried(
    http: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    headers: Mapping[str, str],
    status_error: Callable[[httpx.Response], Awaitable[UpstreamError]],
    delays: Sequence[float] | None = None,
    *,
    asked: Callable[[], None] | None = None,
) -> AsyncIterator[httpx.Response]:
    """POST `body` to `url` and give the streamed 200 response (closed on exit).

    Another status raises `status_error(response)`'s error, except that while
    it is "upstream_busy" the request is sent again after each delay (or the
    server's longer `Retry-After`, up to `MAX_RETRY_AFTER`). The retries happen
    before the body is read, so never once a token was yielded, and the reads
    of the body pass through nothing of this. httpx's exceptions propagate.

    `asked` is called once the request is written, before its answer comes
    (or once it failed): the transport's `WRITTEN` extension.
    """
    pauses = list(retry_delays() if delays is None else delays)
    # Built without the client's `build_request`, which parses the address and
    # merges the client's default headers (httpx's User-Agent and Accept; the
    # transport sends aiohttp's) each time: from the call to the model
    # server's handler, 0.32 ms with it and 0.25 without on a quiet machine,
    # on the way to every answer's request (docs/latency.md, rule 8).
    while True:
        request = httpx.Request(
            "POST",
            _address(url),
            headers={**headers, "Content-Type": "application/json"},
            content=json_body(body),
            extensions=None if asked is None else {WRITTEN: asked},
        )
        response = await http.send(request, stream=True)
        try:
            if response.status_code == 200:
                yield response
                return
            error = await status_error(response)
        finally:
            await response.aclose()
        if error.code != "upstream_busy" or not pauses:
            raise error
        await asyncio.sleep(
            max(pauses.pop(0), min(error.retry_after or 0.0, MAX_RETRY_AFTER))
        )


def json_body(body: dict[str, Any]) -> bytes:
    """`body` as httpx's `json=` writes it (compact, UTF-8 unescaped), by
    orjson: an answer's `httpx.Request` took about 42 µs to build with httpx's
    standard-library encoder, 16 with these bytes, on the way to every
    answer's request (docs/latency.md, rule 8).
    What orjson refuses (an integer over 64 bits, text that is not valid
    UTF-8) goes through the standard library as httpx's did, and fails as it
    did. (orjson writes a NaN as null where httpx refused it: the sampling
    options are checked finite before they get here, `chat.api.requests` and
    `chat.models.sampling`.)"""
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        text = json.dumps(
            body, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
        return text.encode("utf-8")


@functools.lru_cache(maxsize=256)
def _address(url: str) -> httpx.URL:
    """A model server's chat address, parsed once (httpx's parser is Python)."""
    return httpx.URL(url)


def retry_after(value: str | None) -> float | None:
    """Return the seconds of a `Retry-After` header (seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
