"""Pieces the benchmarks share: starting and measuring a throwaway site, and
reading its processes' CPU, memory and children from Linux's /proc."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def deployed() -> dict[str, str]:
    """A benched site's settings as deployed: DEBUG off (under DEBUG Django
    logs every query, a checkpoint's, a question's, which no production server
    pays for), so a secret key and the host it is reached at."""
    return {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
    }


def signed_in(user: Any) -> str:
    """A new session of `user`, signed in: its key (the `sessionid` cookie).
    Called in the benched site's Django, from `manage.py shell` (SHELL_SIGN_IN)."""
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = user.get_session_auth_hash()
    session.create()
    return str(session.session_key)


# The import that gives a `manage.py shell` script `signed_in`.
SHELL_SIGN_IN = "from bench.common import signed_in;"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    low = int(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def manage(env: dict[str, str], *args: str) -> str:
    """Run a management command; its standard output."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def spawn(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    """A Python process in the repository, output discarded."""
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def terminate(processes: list[subprocess.Popen[bytes]], wait: float = 20) -> None:
    """Ask each process to end, then kill those still running after `wait` s."""
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            process.kill()


def spawn_simulator(
    env: dict[str, str], port: int, *options: str
) -> subprocess.Popen[bytes]:
    """The simulator on 127.0.0.1:`port`: no thinking, no time to first token."""
    return spawn(
        env,
        "manage.py",
        "simulate_ollama",
        "--port",
        str(port),
        "--think-tokens",
        "0",
        "--ttft-ms",
        "0",
        *options,
    )


def wait_until_up(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} never answered") from None
            time.sleep(0.1)


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


@dataclass
class StreamResult:
    key: str  # the question asked: it finds the stream's entry in the simulator log
    arrivals: list[float] = field(default_factory=list)  # per token, wall clock
    frames: int = 0
    started: float = 0.0
    first_token: float | None = None
    queue_wait_ms: float | None = None  # chatsite's own figure, from `done`
    viewer_frames: int = 0  # content frames its live-link viewers got, in all
    # The server dropped its handshake: an overloaded Daphne closes a socket not
    # accepted within 5 s (autobahn's openHandshakeTimeout, daphne/server.py).
    refused: bool = False


def answer_text(tokens: int) -> str:
    # Short distinct words: one simulator token each.
    return " ".join(f"t{i}" for i in range(tokens))


def token_ends(tokens: int) -> list[int]:
    """Cumulative code points of the answer after each token."""
    ends, total = [], 0
    for i in range(tokens):
        total += len(f"t{i}") + (1 if i else 0)
        ends.append(total)
    return ends


def record_text(
    result: StreamResult, chunks: list[tuple[float, int]], at: float, text: str
) -> None:
    """A piece of the answer's text arrived `at`: `chunks` gets the answer's
    length by then (for `assign_arrivals`), `result` a frame more and its first
    token."""
    chunks.append((at, (chunks[-1][1] if chunks else 0) + len(text)))
    result.frames += 1
    if result.first_token is None:
        result.first_token = at


def assign_arrivals(ends: list[int], chunks: list[tuple[float, int]]) -> list[float]:
    """Per token: the arrival time of the first chunk that completed it."""
    arrivals, j = [], 0
    for arrived, cumulative in chunks:
        while j < len(ends) and ends[j] <= cumulative:
            arrivals.append(arrived)
            j += 1
    return arrivals
