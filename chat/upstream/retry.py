"""Asking a busy model server again, before anything was streamed.

A server answers 503 while its queue is full or its model loads, and a proxy
in front may answer 429; both become `UpstreamError("upstream_busy")`. Such an
answer comes before the first token, so asking again after a pause costs the
user nothing but the wait. Once a token was yielded there is no retry: the
answer would start over.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing

from django.conf import settings

from chat.upstream.events import Event, UpstreamError

# Pauses before the second, third and fourth try; `UPSTREAM_BUSY_RETRY_DELAYS`
# in the settings overrides them.
BUSY_RETRY_DELAYS: tuple[float, ...] = (0.25, 0.5, 1.0)

# A server's `Retry-After` is obeyed up to this many seconds.
MAX_RETRY_AFTER = 10.0


def retry_delays() -> Sequence[float]:
    return tuple(getattr(settings, "UPSTREAM_BUSY_RETRY_DELAYS", BUSY_RETRY_DELAYS))


async def retry_busy(
    start: Callable[[], AsyncGenerator[list[Event], None]],
    delays: Sequence[float] | None = None,
) -> AsyncGenerator[list[Event], None]:
    """Yield what `start()`'s stream yields; start it again after each delay
    while it fails with "upstream_busy" before yielding anything.

    The pause is the server's `Retry-After` when it gives a longer one (up to
    `MAX_RETRY_AFTER`). The last failure is raised as it came.
    """
    pauses = list(retry_delays() if delays is None else delays)
    while True:
        started = False
        try:
            async with aclosing(start()) as stream:
                async for events in stream:
                    started = True
                    yield events
            return
        except UpstreamError as error:
            if started or error.code != "upstream_busy" or not pauses:
                raise
            pause = max(pauses.pop(0), min(error.retry_after or 0.0, MAX_RETRY_AFTER))
        await asyncio.sleep(pause)


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
