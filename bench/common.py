"""Pieces both benchmarks use to start and measure a throwaway site."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


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
