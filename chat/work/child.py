"""What runs in a worker process around the task: its pid reported to the pool,
its limits, then the task in the language of the request that asked for it."""

from __future__ import annotations

import math
import os
import resource
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

_reports: Connection | None = None


def listen(reports: Connection) -> None:
    """The worker's initializer: where `call` reports which process runs a task."""
    global _reports
    _reports = reports


def call(
    token: int,
    func: Callable[..., Any],
    args: tuple[Any, ...],
    language: str | None,
    memory_bytes: int,
    cpu_seconds: float,
) -> Any:
    """Run `func(*args)` under limits. The address space may grow by
    `memory_bytes` (an allocation past it fails: MemoryError, or the process
    dies), the CPU time by `cpu_seconds` (then SIGXCPU ends the process: the
    backstop of the pool's wall-time kill). No core file is left either way.

    While the task runs, SIGTERM ends the process at once (its default action,
    not pebble's handler, which runs only between Python bytecodes: never inside
    a parser's C code): the pool's kill (`chat.work.pool`). Once the task is
    over, SIGTERM is blocked and the limits lifted: pebble then hands the result
    over holding a lock all workers share, which a process killed there would
    never release."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _reports is not None:
        _reports.send((token, os.getpid()))  # one small write: atomic on a pipe
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    start = _address_space()
    _lower(resource.RLIMIT_AS, start + memory_bytes)
    used = resource.getrusage(resource.RUSAGE_SELF)
    _lower(
        resource.RLIMIT_CPU,
        math.ceil(used.ru_utime + used.ru_stime + cpu_seconds),
    )
    try:
        return _within(func, args, language, start, memory_bytes)
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        for limit in (resource.RLIMIT_AS, resource.RLIMIT_CPU):
            resource.setrlimit(limit, (resource.getrlimit(limit)[1],) * 2)


def _within(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    language: str | None,
    start: int,
    memory_bytes: int,
) -> Any:
    try:
        if language is None:
            return func(*args)
        from django.utils import translation

        with translation.override(language):
            return func(*args)
    except Exception:
        # Some libraries report a failed allocation as their own error (lxml:
        # "Memory allocation failed", a syntax error) and the task then as a
        # damaged file. One that grew past half its budget (a buffer that
        # doubles fails there) and failed ran out of memory.
        if _peak_address_space() - start > memory_bytes // 2:
            raise MemoryError from None
        raise


def _lower(limit: int, soft: int) -> None:
    _, hard = resource.getrlimit(limit)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(limit, (soft, hard))


def _peak_address_space() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmPeak:"):
                return int(line.split()[1]) * 1024
    return 0


def _address_space() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        pages = int(statm.read().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")
