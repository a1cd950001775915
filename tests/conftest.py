"""The suite's own rules: settings for tests, the collection's order and
markers, the work split between pytest-xdist workers, the database's set-up
and the flush after each transactional test, and pytest-django's fixtures it
replaces (``admin_user``, ``django_db_setup``, ``django_db_modify_db_settings``:
they must be a conftest's to win over pytest-django's).

The fixtures are plugins under tests/support/, loaded by pyproject.toml's
``addopts``: the session's PostgreSQL and Redis (``servers``: ``postgres_server``,
``redis_server``, ``test_mode``), the simulator and conversations (``fixtures``),
the people (``personas``: ``alice``, ``bob``, ``alice_client``, ``login``,
``session_cookie``...), the live server (``live_server``: ``live_server_url``)
and headless Chromium (``chromium``: ``browser``, ``context``, ``page``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections

from chatsite.catalogs import compile_stale
from tests.support.flushing import flush_keeping_migrated_rows
from tests.support.plugins.fixtures import is_async_test

# ARTIFACTS and PASSWORDS: tests import them from here.
from tests.support.plugins.live_server import ARTIFACTS  # noqa: F401
from tests.support.plugins.personas import PASSWORDS, make_user  # noqa: F401

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


# --------------------------------------------------------------------------
# Collection: markers, ordering, async DB cleanup


def pytest_configure(config: pytest.Config) -> None:
    # The translated pages need the compiled catalogs, as `make messages`
    # leaves them (a run of pytest alone too).
    compile_stale()


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
    collection's order (tests/support/plugins/scheduling.py). Another `--dist` is left
    alone."""
    if config.getvalue("dist") != "load":
        return None
    from tests.support.plugins.scheduling import ModuleStretches

    return ModuleStretches(config, log)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    request: pytest.FixtureRequest, postgres_server: Any
) -> None:
    """pytest-django's, except that under pytest-xdist a worker on a PostgreSQL
    of its own (tests/support/plugins/servers.py) keeps the plain run's database name
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


# --------------------------------------------------------------------------
# pytest-django's, replaced


@pytest.fixture
def admin_user(django_user_model: Any) -> Any:
    """Superuser "admin" (replaces pytest-django's; ``admin_client`` uses it)."""
    return make_user(django_user_model, "admin", is_staff=True, is_superuser=True)


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
