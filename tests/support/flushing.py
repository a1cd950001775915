"""The flush after each transactional test, cheaper than Django's and leaving
the same database (`tests/conftest.py` puts it in place for the session)."""

from __future__ import annotations

import weakref
from typing import Any

from django.db import connections

# Rows that migrate's post_migrate handlers make and nothing else writes: the
# content types and the permissions. Django's flush after a transactional test
# empties every table and then emits post_migrate to make these again (two
# thirds of the flush's time, about 30 queries); the flush below keeps them as
# migrate left them, as long as those handlers are the only ones, and empties
# the other tables more cheaply (`empty_tables`).
_KEPT_TABLES = frozenset({"django_content_type", "auth_permission"})
_KEPT_TABLES_MAKERS = frozenset(
    {
        "django.contrib.auth.management.create_permissions",
        "django.contrib.contenttypes.management.create_contenttypes",
    }
)


def post_migrate_makes_only_the_kept_rows() -> bool:
    from django.db.models.signals import post_migrate

    for entry in post_migrate.receivers:
        receiver = entry[1]
        if isinstance(receiver, weakref.ReferenceType):
            receiver = receiver()
        name = f"{receiver.__module__}.{receiver.__qualname__}" if receiver else ""
        if receiver is not None and name not in _KEPT_TABLES_MAKERS:
            return False
    return True


def flush_keeping_migrated_rows(test_case: Any, original: Any) -> None:
    """`TransactionTestCase._fixture_teardown`, without the post_migrate round:
    every table but `_KEPT_TABLES` is emptied (the same statement Django's
    flush runs, minus those two tables). Anything unusual takes Django's way."""
    if (
        test_case.available_apps is not None
        or test_case.serialized_rollback
        or not post_migrate_makes_only_the_kept_rows()
    ):
        original(test_case)
        return
    for db_name in test_case._databases_names(include_mirrors=False):
        empty_tables(connections[db_name])


def empty_tables(connection: Any) -> None:
    """Empty every table of the site's models but `_KEPT_TABLES`, as Django's
    flush does (no sequence reset). On PostgreSQL one DELETE per table in one
    round trip instead of its TRUNCATE: a TRUNCATE makes new files for every
    table and index, about 40 times slower on tables of a few rows. Django's
    foreign keys are DEFERRABLE INITIALLY DEFERRED, so the order does not
    matter; a constraint that is not (raw SQL) fails the DELETE, and then the
    TRUNCATE runs after all."""
    from django.core.management.color import no_style
    from django.db import DatabaseError

    tables = [
        table
        for table in connection.introspection.django_table_names(
            only_existing=True, include_views=False
        )
        if table not in _KEPT_TABLES
    ]
    if not tables:
        return
    if connection.vendor == "postgresql":
        quote = connection.ops.quote_name
        deletes = "; ".join(f"DELETE FROM {quote(table)}" for table in tables)
        try:
            connection.ops.execute_sql_flush(
                [f"SET CONSTRAINTS ALL DEFERRED; {deletes}"]
            )
            return
        except DatabaseError:
            pass
    connection.ops.execute_sql_flush(connection.ops.sql_flush(no_style(), tables))
