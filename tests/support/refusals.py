"""Real database refusals for the tests of a turn that is not stored: a
trigger that fails a write (PostgreSQL and SQLite), and a table whose writes
another connection holds back (PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import psycopg
from django.db import connection

T = TypeVar("T", str, int)


@contextmanager
def refused(name: str, event: str, table: str, column: str, value: T) -> Iterator[T]:
    """A trigger `name` fails the `event` (INSERT or UPDATE) of a `table` row
    whose new `column` is `value`; yields `value`."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"CREATE FUNCTION {name}() RETURNS trigger AS $$ BEGIN"
                f" IF NEW.{column} = %s THEN RAISE EXCEPTION 'refused by the test';"
                " END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
                [value],
            )
            cursor.execute(
                f"CREATE TRIGGER {name} BEFORE {event} ON {table}"
                f" FOR EACH ROW EXECUTE FUNCTION {name}()"
            )
        else:
            cursor.execute(
                f"CREATE TRIGGER {name} BEFORE {event} ON {table}"
                f" WHEN NEW.{column} = '{value}'"
                " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
            )
    try:
        yield value
    finally:
        with connection.cursor() as cursor:
            postgresql = connection.vendor == "postgresql"
            cursor.execute(
                f"DROP TRIGGER {name}" + (f" ON {table}" if postgresql else "")
            )
            if postgresql:
                cursor.execute(f"DROP FUNCTION {name}()")


@contextmanager
def writes_held(table: str) -> Iterator[Callable[[], None]]:
    """Another connection holds a SHARE lock on `table` (PostgreSQL) until the
    function yielded is called (or the block ends): a write to it waits, and
    so does its transaction's commit."""
    params = connection.settings_dict
    other = psycopg.connect(
        host=params["HOST"],
        port=params["PORT"],
        user=params["USER"],
        password=params["PASSWORD"],
        dbname=params["NAME"],
    )
    try:
        other.execute(f"LOCK TABLE {table} IN SHARE MODE")
        yield other.rollback
    finally:
        other.close()
