"""The serving process's resident memory while a phase runs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

from bench.common import (
    descendants,
    rss_mib,
)

SAMPLE_EVERY = 0.1  # the serving process's memory, sampled
# The bench kills the serving process past this resident memory: the machine
# may be shared, and one import has taken gigabytes.
RSS_GUARD_MIB = 6144


class Memory:
    """The serving process's resident memory while a phase runs: sampled, and
    its peak (VmHWM) after a reset. Kills the process past RSS_GUARD_MIB."""

    def __init__(self, pid: int, guard_mib: float) -> None:
        self.pid = pid
        self.guard_mib = guard_mib
        self.before = rss_mib(pid)
        self.sampled_peak = self.before
        self.workers_peak = 0.0  # its child processes together (worker pools)
        self.killed = False
        # Writing 5 resets VmHWM to the present VmRSS (proc(5)).
        try:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
            self.reset = True
        except OSError:
            self.reset = False

    def sample(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            now = rss_mib(self.pid)
            self.sampled_peak = max(self.sampled_peak, now)
            workers = sum(rss_mib(child) for child in descendants(self.pid))
            self.workers_peak = max(self.workers_peak, workers)
            if now > self.guard_mib and not self.killed:
                self.killed = True
                os.kill(self.pid, signal.SIGKILL)

    async def watch(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SAMPLE_EVERY)

    def figures(self) -> dict[str, Any]:
        self.sample()
        peak = self.sampled_peak
        with contextlib.suppress(OSError):
            if self.reset:
                peak = max(peak, rss_mib(self.pid, "VmHWM"))
        try:
            after = rss_mib(self.pid)
        except OSError:
            after = float("nan")
        return {
            "rss_before_mib": self.before,
            "rss_peak_mib": peak,
            "rss_after_mib": after,
            "rss_growth_mib": peak - self.before,
            "workers_peak_mib": self.workers_peak,
            "killed_by_guard": self.killed,
        }
