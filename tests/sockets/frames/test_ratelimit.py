from __future__ import annotations

from chat.sockets.ratelimit import FrameLimiter, TokenBucket, Verdict


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_bucket_allows_a_burst_then_the_rate():
    clock = Clock()
    bucket = TokenBucket(rate=2, burst=3, clock=clock)
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    clock.now += 0.5  # one token back
    assert [bucket.take(), bucket.take()] == [True, False]
    clock.now += 60  # never more than the burst saved up
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]


def test_bucket_ignores_a_clock_going_backwards():
    clock = Clock()
    bucket = TokenBucket(rate=1, burst=1, clock=clock)
    assert bucket.take()
    clock.now -= 10
    assert not bucket.take()


def test_limiter_warns_once_per_run_then_closes_a_sustained_flood(settings):
    settings.WS_FRAME_RATE = 1
    settings.WS_FRAME_BURST = 2
    settings.WS_FLOOD_CLOSE_AFTER = 4
    clock = Clock()
    limiter = FrameLimiter(clock=clock)
    verdicts = [limiter.check() for _ in range(5)]
    assert verdicts == [
        Verdict.ACCEPT,
        Verdict.ACCEPT,
        Verdict.WARN,
        Verdict.DROP,
        Verdict.DROP,
    ]
    clock.now += 1  # one frame's worth: accepted, and the next drop warns again
    assert [limiter.check(), limiter.check()] == [Verdict.ACCEPT, Verdict.WARN]
    # ...but the drops' own allowance (4, one back a second) runs out.
    assert [limiter.check(), limiter.check()] == [Verdict.DROP, Verdict.CLOSE]
    clock.now += 60  # closed once; whatever still arrives is dropped
    assert [limiter.check(), limiter.check()] == [Verdict.DROP, Verdict.DROP]


def test_limiter_never_closes_a_client_that_keeps_to_the_rate(settings):
    settings.WS_FRAME_RATE = 8
    settings.WS_FRAME_BURST = 1
    settings.WS_FLOOD_CLOSE_AFTER = 1
    clock = Clock()
    limiter = FrameLimiter(clock=clock)
    for _ in range(1000):
        assert limiter.check() is Verdict.ACCEPT
        clock.now += 0.125
