"""What a test sees of processes: the peak resident memory of this one while
something runs, and the worker process running a task."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psutil

from chat.work import pool

MB = 1024 * 1024


@dataclass
class Growth:
    bytes: int = 0


@contextmanager
def peak_growth(pid: int | None = None) -> Iterator[Growth]:
    """How far the resident memory of `pid` (this process) rose above its
    level at the start, sampled every few milliseconds until the end."""
    process = psutil.Process(pid)
    start = process.memory_info().rss
    growth = Growth()
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            growth.bytes = max(growth.bytes, process.memory_info().rss - start)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield growth
    finally:
        done.set()
        sampler.join()


def worker_of(owner: str) -> int | None:
    """The process running `owner`'s task in this process's pool, as the pool
    recorded it (the pid its worker reported): never found by looking at
    processes, where this session's database and others' workers are too."""
    pids = pool.default().pids(owner)
    return pids[0] if pids else None


def gone(pid: int) -> bool:
    """No such process any more (a zombie not yet reaped counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
