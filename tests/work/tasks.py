"""Tasks for the worker processes (module-level: they are pickled by name).
Each that is to be stopped first writes its pid to `started`, so a test knows
it runs and which process to look for afterwards."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from django.utils import translation


def pid() -> int:
    return os.getpid()


def language() -> str | None:
    return translation.get_language()


def spin(started: str) -> None:
    Path(started).write_text(str(os.getpid()))
    while True:
        pass


def allocate(started: str, size: int) -> int:
    Path(started).write_text(str(os.getpid()))
    return len(bytearray(size))


def refuse(message: str) -> None:
    raise ValueError(message)


def wait_for(started: str, release: str) -> int:
    """Say it started, then wait (in the worker: a test never sleeps) until
    `release` exists."""
    Path(started).write_text(str(os.getpid()))
    while not Path(release).exists():
        time.sleep(0.01)
    return os.getpid()


def hash_for_ages(started: str) -> bytes:
    """Say it started, then stay in C code (a key derivation of a billion
    rounds), where a signal handler written in Python never runs."""
    Path(started).write_text(str(os.getpid()))
    return hashlib.pbkdf2_hmac("sha256", b"secret", b"salt", 10**9)
