"""The live server (a pytest plugin, loaded with ``-p
tests.support.plugins.live_server``):
``live_server_url`` (session), ``http://127.0.0.1:<port>`` of Daphne serving
``chatsite.asgi`` plus ``/static/`` on the test database, in a forked child.
Tests using it need ``@pytest.mark.django_db(transaction=True)``: the server
only sees committed rows. Its log: ``test-artifacts/live-daphne.log``."""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "test-artifacts"
# One per pytest-xdist worker (live-daphne-gw0.log, ...): each has its own server.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
LIVE_SERVER_LOG = ARTIFACTS / f"live-daphne{'-' + _WORKER if _WORKER else ''}.log"


_INHERITED_DB_CONNECTIONS: list[Any] = []


def _live_server_setup(log_path: str) -> None:
    """Runs in the forked child, before Daphne serves."""
    from concurrent.futures import ThreadPoolExecutor

    from asgiref.sync import SyncToAsync
    from channels.layers import channel_layers
    from channels.testing.live import set_database_connection

    # Everything the child prints goes to the log file, not pytest's capture.
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        force=True,
    )
    for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
        for handler in getattr(logger, "handlers", ()):
            if type(handler) is logging.StreamHandler:
                handler.setStream(sys.stderr)
    # docs/testing.md, G5: NAME is already test_chatsite here; settings pin TEST.NAME.
    set_database_connection()
    # The parent's DB sockets were inherited: never use or close them here.
    for conn in connections.all(initialized_only=True):
        if conn.connection is not None:
            _INHERITED_DB_CONNECTIONS.append(conn.connection)
            conn.connection = None
        # Likewise the parent's connection pool (DATABASE_POOL): its sockets are
        # the parent's and its worker threads did not survive the fork.
        pools = getattr(type(conn), "_connection_pools", None)
        if pools:
            _INHERITED_DB_CONNECTIONS.append(dict(pools))
            pools.clear()
    # docs/testing.md, G7: asgiref's executor thread did not survive the fork.
    SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)
    channel_layers.backends.clear()
    logging.getLogger("tests.live_server").info("live server child pid %s", os.getpid())


def _wait_until_serving(proc: Any, stack_file: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not proc.ready.wait(0.2):
        if not proc.is_alive() or time.monotonic() > deadline:
            break
    else:
        return
    detail = ""
    if proc.is_alive():  # hung: get its stacks
        os.kill(proc.pid, signal.SIGUSR1)
        time.sleep(0.5)
        detail = Path(stack_file.name).read_text(errors="replace")
    with contextlib.suppress(Exception):
        detail += proc.errors.get(timeout=1)[1]
    log = LIVE_SERVER_LOG.read_text(errors="replace")[-4000:]
    raise RuntimeError(
        f"daphne did not start (exit code {proc.exitcode}):\n{detail}\n{log}"
    )


@pytest.fixture(scope="session")
def live_server_url(
    test_mode: str, django_db_setup: None, django_db_blocker: Any
) -> Iterator[str]:
    """Daphne serving the whole site (HTTP, WebSockets, /static/) on the test DB."""
    if test_mode == "sqlite":
        pytest.skip(
            "live server needs PostgreSQL: in-memory SQLite is not shared with a child"
        )
    from channels.testing.live import make_application
    from daphne.testing import DaphneProcess
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    ARTIFACTS.mkdir(exist_ok=True)
    LIVE_SERVER_LOG.write_text("")
    proc = DaphneProcess(
        "127.0.0.1",
        partial(make_application, static_wrapper=ASGIStaticFilesHandler),  # type: ignore[arg-type]
        setup=partial(_live_server_setup, str(LIVE_SERVER_LOG)),
    )
    # If the child hangs before serving, SIGUSR1 makes it dump its stacks here.
    stacks = LIVE_SERVER_LOG.with_suffix(".stacks.txt")
    stack_file = open(stacks, "w")  # noqa: SIM115
    faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    try:
        with django_db_blocker.unblock():  # docs/testing.md, G6
            proc.start()
    finally:
        faulthandler.unregister(signal.SIGUSR1)
    try:
        _wait_until_serving(proc, stack_file)
        yield f"http://127.0.0.1:{proc.port.value}"
    finally:
        proc.terminate()
        proc.join(10)
        if proc.is_alive():
            proc.kill()
            proc.join()
        stack_file.close()
