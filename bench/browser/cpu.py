"""The CPU the browser bench's processes use (Linux's /proc), and the
browser's niceness."""

from __future__ import annotations

import os
from pathlib import Path

from bench.browser.site import Site


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes (Linux /proc)."""
    total = 0
    for pid in pids:
        try:
            fields = _stat(pid)
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def descendants(root: int) -> list[int]:
    """This process's children, grandchildren, ... (the browser's processes)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents.setdefault(int(_stat(int(entry.name))[1]), []).append(
                    int(entry.name)
                )
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
    out, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def chromium_kind(pid: int) -> str:
    """A Chromium process's ``--type`` (renderer, gpu-process, ...); "main" for the
    browser process. Chromium rewrites its command line, so split on spaces."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split()
    except OSError:
        return "gone"
    kind = next((w[7:] for w in words if w.startswith(b"--type=")), b"main")
    return kind.decode()


def lower_priority(pids: list[int], nice: int) -> None:
    """Renice every thread of these processes (Linux niceness is per thread), so
    that the server's processes win the CPU when the browser would starve them."""
    for pid in pids:
        try:
            threads = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
        except OSError:
            continue
        for tid in threads:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
            except OSError:
                continue  # the thread ended meanwhile


class CpuMeter:
    """CPU seconds used by Daphne, the simulator and the browser over a span (the
    browser's also by process kind: renderers, the GPU process that composites
    in software here, the main process)."""

    def __init__(self, site: Site, floor: bool = False) -> None:
        browser = [pid for pid in descendants(os.getpid()) if pid not in site.pids()]
        self.groups = {
            # The server's column: Daphne, or the bare relay in the floor's rows.
            "daphne": [site.processes[2 if floor else 1].pid],
            "simulator": [site.processes[0].pid],
            "browser": browser,
            "renderers": [p for p in browser if chromium_kind(p) == "renderer"],
            "gpu": [p for p in browser if chromium_kind(p) == "gpu-process"],
        }
        self.before = {k: cpu_seconds(v) for k, v in self.groups.items()}

    def used(self) -> dict[str, float]:
        return {
            f"cpu_{k}_s": cpu_seconds(v) - self.before[k]
            for k, v in self.groups.items()
        }
