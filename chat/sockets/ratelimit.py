"""Per-connection flood control for the conversation socket.

Each socket gets a token bucket: ``WS_FRAME_RATE`` frames a second on average,
bursts of up to ``WS_FRAME_BURST``. A frame over the limit is dropped and the
first of a run is answered with a ``rate_limited`` error frame; a client that
keeps flooding (about ``WS_FLOOD_CLOSE_AFTER`` frames dropped in quick
succession) is closed with ``CLOSE_RATE_LIMITED`` (4429, in
`chat.sockets.close_codes`). Only client frames pass through here, never model
tokens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import Enum

from django.conf import settings


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up; starts full."""

    def __init__(
        self,
        rate: float,
        burst: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self.tokens = burst
        self.updated = clock()

    def take(self) -> bool:
        now = self.clock()
        elapsed = max(0.0, now - self.updated)
        self.tokens = min(self.burst, self.tokens + elapsed * self.rate)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


class Verdict(Enum):
    ACCEPT = "accept"
    WARN = "warn"  # drop the frame, tell the client once
    DROP = "drop"  # drop the frame silently (already told)
    CLOSE = "close"  # sustained flood: close with CLOSE_RATE_LIMITED (4429)


class FrameLimiter:
    """What to do with each incoming frame of one connection.

    Frames come out of one bucket; frames dropped for want of it come out of a
    second one (``WS_FLOOD_CLOSE_AFTER`` deep, refilled at the frame rate), so a
    client that goes on sending well over the rate is closed, while one that
    only bursts now and then is merely slowed down.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        rate = settings.WS_FRAME_RATE
        self.frames = TokenBucket(rate, settings.WS_FRAME_BURST, clock=clock)
        self.drops = TokenBucket(rate, settings.WS_FLOOD_CLOSE_AFTER, clock=clock)
        self.dropping = False
        self.closing = False

    def check(self) -> Verdict:
        if self.closing:  # frames still arriving after the close: ignored
            return Verdict.DROP
        if self.frames.take():
            self.dropping = False
            return Verdict.ACCEPT
        if not self.drops.take():
            self.closing = True
            return Verdict.CLOSE
        first, self.dropping = not self.dropping, True
        return Verdict.WARN if first else Verdict.DROP
