"""Shared fixtures: personas, a live Daphne server, headless Chromium.

The session's PostgreSQL and Redis come from the ``tests.support.servers`` plugin
(``postgres_server``, ``redis_server``, ``test_mode`` fixtures).

Fixtures:

* ``alice``, ``bob`` (users), ``admin_user`` (superuser); passwords in
  ``PASSWORDS``; ``alice_client``, ``bob_client`` (logged-in ``Client``);
  pytest-django's ``admin_client`` uses our ``admin_user``.
* ``live_server_url`` (session): ``http://127.0.0.1:<port>`` of Daphne serving
  ``chatsite.asgi`` plus ``/static/`` on the test database, in a forked child.
  Tests using it need ``@pytest.mark.django_db(transaction=True)``: the server
  only sees committed rows. Its log: ``test-artifacts/live-daphne.log``.
* ``playwright``, ``browser`` (session), ``context``, ``page`` (function):
  Debian's Chromium through Playwright; tests using them are marked ``browser``
  automatically and run last. A failing test's page is saved as a screenshot in
  ``test-artifacts/``.
* ``login``: ``login(page, user)`` puts ``user``'s session cookie into the page's
  browser context; ``session_cookie(user)`` returns ``"sessionid=..."`` for a
  ``WebsocketCommunicator`` ``headers=[(b"cookie", ...)]``.
"""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections

from chatsite.catalogs import compile_stale
from tests.support.fixtures import is_async_test
from tests.support.flushing import flush_keeping_migrated_rows

# Playwright's sync API keeps an event loop running in the main thread; Django
# would refuse ORM calls in browser tests (docs/testing.md, G9). Test process only.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# Uploaded files go to a folder of this process's own (the forked live server
# shares it), never to the checkout's media/.
settings.STORAGES["default"]["OPTIONS"]["location"] = tempfile.mkdtemp(
    prefix="chatsite-media-"
)

# Hashing with 1M PBKDF2 rounds costs ~0.3 s per user; the forked live server
# inherits this, so logging in through the browser works too.
settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
# One per pytest-xdist worker (live-daphne-gw0.log, ...): each has its own server.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
LIVE_SERVER_LOG = ARTIFACTS / f"live-daphne{'-' + _WORKER if _WORKER else ''}.log"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PLAYWRIGHT_FIXTURES = frozenset({"playwright", "browser", "context", "page"})
PASSWORDS = {
    "alice": "password-alice-123",
    "bob": "password-bob-123",
    "admin": "password-admin-123",
}


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes", "on"}


# --------------------------------------------------------------------------
# Collection: markers, ordering, async DB cleanup


def pytest_configure(config: pytest.Config) -> None:
    # The translated pages need the compiled catalogs, as `make messages`
    # leaves them (a run of pytest alone too).
    compile_stale()


def pytest_itemcollected(item: pytest.Item) -> None:
    # Before `-m` deselection runs, so `-m "not browser"` excludes these.
    if PLAYWRIGHT_FIXTURES & set(getattr(item, "fixturenames", ())):
        item.add_marker(pytest.mark.browser)


def _is_transactional(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("django_db")
    if marker is not None and (
        marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences")
    ):
        return True
    names = set(getattr(item, "fixturenames", ()))
    return bool({"transactional_db", "live_server"} & names)


@pytest.hookimpl(trylast=True)  # after pytest-django's own reordering
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    for item in items:
        names = getattr(item, "fixturenames", None)
        if names is None:
            continue
        if is_async_test(item):
            names.append("_close_async_db_connections")
        uses_db = item.get_closest_marker("django_db") is not None or "db" in names
        if "live_server_url" in names and uses_db and not _is_transactional(item):
            raise pytest.UsageError(
                f"{item.nodeid} uses live_server_url with a non-transactional "
                "database: the server process cannot see uncommitted rows. "
                "Use @pytest.mark.django_db(transaction=True)."
            )
    # Tests of PostgreSQL's own features are not the SQLite pass's: left out,
    # not skipped (a skip in CI would hide a test that never ran).
    if os.environ.get("CHATSITE_TEST_DB") == "sqlite":
        kept = [item for item in items if item.get_closest_marker("postgres") is None]
        if len(kept) < len(items):
            config.hook.pytest_deselected(items=[i for i in items if i not in kept])
            items[:] = kept
    # docs/testing.md, G8: with the session's sync Playwright up, async tests
    # cannot run their own loop. Browser tests go last (stable sort keeps the rest).
    items.sort(key=lambda i: i.get_closest_marker("browser") is not None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`-n N` (plain, or `--dist load`): whole modules per worker, in the
    collection's order (tests/support/scheduling.py). Another `--dist` is left alone."""
    if config.getvalue("dist") != "load":
        return None
    from tests.support.scheduling import ModuleStretches

    return ModuleStretches(config, log)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    request: pytest.FixtureRequest, postgres_server: Any
) -> None:
    """pytest-django's, except that under pytest-xdist a worker on a PostgreSQL
    of its own (tests/support/servers.py) keeps the plain run's database name
    (`test_chatsite`): the `_gw0` suffix only matters where workers share a
    server (one from $DATABASE_URL) or a file."""
    if postgres_server is not None and postgres_server.managed:
        return
    request.getfixturevalue("django_db_modify_db_settings_parallel_suffix")


# --------------------------------------------------------------------------
# Transactional tests: the flush after each one


@pytest.fixture(scope="session", autouse=True)
def _cheaper_transactional_flush() -> Iterator[None]:
    from django.test import TransactionTestCase

    original = TransactionTestCase._fixture_teardown
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            TransactionTestCase,
            "_fixture_teardown",
            lambda self: flush_keeping_migrated_rows(self, original),
        )
        yield


@pytest.fixture(autouse=True)
def _site_language_after_each_test() -> Iterator[None]:
    """docs/testing.md, G11: a page asked for in another language leaves that
    language active in the test's thread (the locale middleware, or a view,
    activates it; nothing deactivates it), and later tests would read their
    refusals in it."""
    yield
    from django.utils import translation

    translation.deactivate()


@pytest.fixture
async def _close_async_db_connections() -> Any:
    """docs/testing.md, G3: the async ORM leaves a connection open in a thread."""
    yield
    await sync_to_async(connections.close_all)()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    setattr(item, f"_report_{report.when}", report)
    return report


# --------------------------------------------------------------------------
# Personas


def _make_user(model: Any, name: str, **extra: Any) -> Any:
    return model.objects.create_user(
        username=name, email=f"{name}@example.org", password=PASSWORDS[name], **extra
    )


@pytest.fixture
def alice(django_user_model: Any) -> Any:
    return _make_user(django_user_model, "alice", first_name="Alice")


@pytest.fixture
def bob(django_user_model: Any) -> Any:
    return _make_user(django_user_model, "bob", first_name="Bob")


@pytest.fixture
def admin_user(django_user_model: Any) -> Any:
    """Superuser "admin" (replaces pytest-django's; ``admin_client`` uses it)."""
    return _make_user(django_user_model, "admin", is_staff=True, is_superuser=True)


@pytest.fixture
def alice_client(alice: Any) -> Any:
    from django.test import Client

    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def bob_client(bob: Any) -> Any:
    from django.test import Client

    client = Client()
    client.force_login(bob)
    return client


def _session_key(user: Any) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return str(client.cookies[settings.SESSION_COOKIE_NAME].value)


@pytest.fixture
def session_cookie() -> Callable[[Any], str]:
    """``session_cookie(user)`` -> ``"sessionid=<key>"`` (a Cookie header value)."""
    return lambda user: f"{settings.SESSION_COOKIE_NAME}={_session_key(user)}"


@pytest.fixture
def login(live_server_url: str) -> Callable[[Any, Any], None]:
    """``login(page_or_context, user)``: the browser is now logged in as ``user``."""

    def _login(target: Any, user: Any) -> None:
        context = getattr(target, "context", target)
        context.add_cookies(
            [
                {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": _session_key(user),
                    "url": live_server_url,
                }
            ]
        )

    return _login


# --------------------------------------------------------------------------
# Live Daphne server

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
def django_db_setup(
    django_db_setup: None, django_db_blocker: Any, test_mode: str
) -> Iterator[None]:
    """pytest-django's, and before the test database is dropped, the sessions
    still open on it are ended: connections that async tests opened in executor
    threads, which no `close()` in this thread reaches."""
    yield
    if test_mode == "sqlite":
        return
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
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


# --------------------------------------------------------------------------
# Playwright + Chromium (our own fixtures; pytest-playwright is not used)


@pytest.fixture(scope="session")
def playwright() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(playwright: Any) -> Iterator[Any]:
    """Headless Chromium from ``$CHROMIUM`` (default ``/usr/bin/chromium``)."""
    if not os.access(CHROMIUM, os.X_OK):
        reason = (
            f"Chromium not found at {CHROMIUM} "
            "(run scripts/ensure-chromium.sh, or set CHROMIUM=/path/to/chromium)"
        )
        if _in_ci():
            pytest.fail(f"CI=true: {reason}", pytrace=False)
        pytest.skip(reason)
    try:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
    except Exception as exc:
        if _in_ci():
            raise
        pytest.skip(f"Chromium at {CHROMIUM} does not start: {exc}")
    from playwright.sync_api import expect

    expect.set_options(timeout=10_000)  # a busy 2-core box
    yield browser
    browser.close()


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(15_000)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    page = context.new_page()
    yield page
    report = getattr(request.node, "_report_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)[-150:]
        try:
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        except Exception as exc:  # the page may be gone
            sys.stderr.write(f"screenshot failed: {exc}\n")
