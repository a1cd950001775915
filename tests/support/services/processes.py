"""A server process the tests start: its handle (`Server`), a free port, and
the ways it dies with the test run and runs as `nobody` when the run is root."""

from __future__ import annotations

import ctypes
import os
import pwd
import shutil
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

START_TIMEOUT = 60.0


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes", "on"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent(sig: int) -> Any:
    """preexec_fn: the server gets ``sig`` if pytest dies (even by SIGKILL)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - not glibc
        return None

    def _set() -> None:
        libc.prctl(1, sig)  # PR_SET_PDEATHSIG; runs after the uid change

    return _set


@dataclass
class Server:
    """A server the tests can reach. ``managed``: started (and stopped) by us."""

    kind: str
    host: str
    port: int
    url: str
    dsn: str
    managed: bool = False
    version: str = ""
    source: str = ""
    started_in: float = 0.0
    log_path: Path | None = None
    # internals
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    base: Path | None = field(default=None, repr=False)
    owner_pid: int = field(default_factory=os.getpid, repr=False)
    _log: IO[bytes] | None = field(default=None, repr=False)

    def stop(self) -> None:
        if os.getpid() != self.owner_pid:  # a forked child (the live server)
            return
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            # postgres: SIGINT is "fast shutdown"; redis: SIGTERM, no save.
            proc.send_signal(
                signal.SIGINT if self.kind == "postgres" else signal.SIGTERM
            )
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.base is not None and not os.environ.get("CHATSITE_TEST_KEEP_SERVERS"):
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None


def _drop_privileges() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {}
    nobody = pwd.getpwnam("nobody")
    return {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}
