"""What a process costs, read from Linux's /proc: its CPU time, resident
memory, children and command line (and this process's own CPU time)."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """The process's children, theirs, and so on (Linux's /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found += [int(child), *descendants(int(child))]
    return found


def cmdline(pid: int) -> bytes:
    """The process's command line; b"" once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """The process's resident memory (VmHWM: its peak) from Linux's /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def client_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system
