"""`DATABASES` from the environment (`DATABASE_URL`, `DATABASE_POOL`,
`DATABASE_POOL_SIZE`, `DATABASE_PREPARED`; README, "Configuration"): a SQLite
file in the project by default, each engine with the options it needs here."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from chatsite.env import env_bool, env_int


def databases(base_dir: Path) -> dict[str, dict[str, Any]]:
    try:
        config = dj_database_url.config(
            env="DATABASE_URL",
            default=f"sqlite:///{base_dir / 'db.sqlite3'}",
            conn_max_age=0,
        )
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"DATABASE_URL is not a database URL: {exc}"
        ) from None
    # Options of each engine's own are added below: a plain dict.
    default = cast(dict[str, Any], config)
    if default["ENGINE"] == "django.db.backends.sqlite3":
        # Several async tasks write (checkpoints, final saves): wait for the lock
        # instead of failing, and let readers run beside the writer. A transaction
        # takes the write lock when it begins (IMMEDIATE): a deferred one that read
        # first and then writes cannot wait for the lock (another writer may have
        # changed what it read), so SQLite fails it at once with "database is
        # locked" whatever the timeout (a question stored by `begin_turn` was lost).
        default.setdefault("OPTIONS", {}).update(
            {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL;",
            }
        )
        # Kept open between calls (one file, no server to tie up): opening one is a
        # new SQLite handle, the WAL pragma and Django's functions registered again,
        # about a millisecond before a question's first query (docs/latency.md,
        # rule 8). PostgreSQL's come from the pool instead (CONN_MAX_AGE 0 there).
        default["CONN_MAX_AGE"] = None
    else:
        # The live-server test child must not derive "test_test_<name>"
        # (docs/testing.md, G5).
        default["TEST"] = {"NAME": f"test_{default['NAME']}"}
        if env_bool("DATABASE_POOL", True):
            # Every database call of a socket or a request takes a connection and
            # gives it back (ASGI cannot keep one per thread): from a pool, that
            # costs no connection set-up. Off (DATABASE_POOL=false) behind PgBouncer.
            default.setdefault("OPTIONS", {})["pool"] = {
                "min_size": 1,
                "max_size": env_int("DATABASE_POOL_SIZE", 10, minimum=1),
                "timeout": 10,
            }
        if env_bool("DATABASE_PREPARED", True):
            # The queries of `chat.models.compiled_queries` (a question's, before
            # the model is asked) are prepared on the server: planned once per
            # connection. Django's own cursors bind on the client and are never
            # prepared. Off behind a PgBouncer older than 1.21 or without
            # max_prepared_statements.
            default.setdefault("OPTIONS", {})["prepare_threshold"] = 5
    return {"default": default}
