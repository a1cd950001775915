"""What a test sees of processes: the peak resident memory of this one while
something runs, and the worker processes below it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psutil

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


def busy_worker(cpu_seconds: float = 0.3) -> int | None:
    """A worker (a child of the fork server, a child of this process) that
    has used `cpu_seconds` of CPU: one reading a file (idle ones use none)."""
    workers = [
        worker for server in psutil.Process().children() for worker in _children(server)
    ]
    for child in workers:
        try:
            times = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        if times.user + times.system >= cpu_seconds:
            return child.pid
    return None


def gone(pid: int) -> bool:
    """No such process any more (a zombie not yet reaped counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _children(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.children()
    except psutil.Error:
        return []


def _is_fork_server(process: psutil.Process) -> bool:
    # Not the other processes a test session starts (its database's, ...).
    try:
        return "multiprocessing.forkserver" in " ".join(process.cmdline())
    except psutil.Error:
        return False
