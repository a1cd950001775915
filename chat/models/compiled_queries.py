"""Queries compiled once per connection and run again with another key.

A question's first read (`turn_rows.prepare_turn_of`: the conversation, its
model, its owner, three facts and a lock) spends about 1.3 ms in Django's query
compiler and about 0.1 ms in SQLite, before the model server is asked
(docs/latency.md, rule 8). `Prepared` keeps what the compiler made of the
queryset (its SQL, and how a row becomes the model and its `select_related`
objects and annotations, as `ModelIterable` does) and runs that SQL again with
the key in place of the one it was built with.

On PostgreSQL its statements are also prepared on the server, once per
connection (`DATABASE_PREPARED`, on unless turned off): planning the turn read
again cost the server about 0.4 ms each time, and the read goes from about
0.8 ms to 0.3 ms. Django's own cursors bind their parameters on the client,
which psycopg never prepares, so only these statements are.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar, cast
from weakref import WeakKeyDictionary

from django.db import DEFAULT_DB_ALIAS, connections, models, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from django.db.models import query
from django.db.models.sql.compiler import SQLCompiler

M = TypeVar("M", bound=models.Model)

# The key the query is built with, found again among its parameters: no other
# parameter of a query worth preparing is this number. A 64-bit id's (the
# project's ids are `BigAutoField`s): Django compiles a lookup of a 32-bit one
# out of its range to no query at all.
KEY = -7_310_000_000_000_000_017


class Prepared(Generic[M]):
    """`build(key)`: the queryset for `key`, compiled once per connection
    wrapper (one per thread and database, the SQL being the backend's own).
    `get(key)`: its one model object, as `QuerySet.get`; `rows(key)`: its rows
    as tuples (a `values_list` queryset). `keyed=False`: a query of no key
    (`build` is given one and ignores it). `at_start`: compiled as a process
    starts (`compile_all`), for a query a question runs before its model server
    is asked."""

    def __init__(
        self,
        build: Callable[[int], models.QuerySet[Any]],
        *,
        keyed: bool = True,
        at_start: bool = False,
    ) -> None:
        self.build, self.keyed = build, keyed
        self.compiled: WeakKeyDictionary[BaseDatabaseWrapper, _Compiled] = (
            WeakKeyDictionary()
        )
        if at_start:
            AT_START.append(self)

    def get(self, key: int, using: str = DEFAULT_DB_ALIAS) -> M:
        return self.one(self.rows(key, using), using)

    def one(self, rows: list[Any], using: str = DEFAULT_DB_ALIAS) -> M:
        """The model object of `rows` (its rows, read by `together`), or
        DoesNotExist as `get`."""
        compiled = self._compiled(using)
        if not rows:
            raise compiled.model.DoesNotExist(
                f"{compiled.model._meta.object_name} matching query does not exist."
            )
        return cast(M, compiled.instance(rows[0]))

    def rows(self, key: int = 0, using: str = DEFAULT_DB_ALIAS) -> list[Any]:
        return self._compiled(using).run(key)

    def _compiled(self, using: str) -> _Compiled:
        connection = connections[using]
        compiled = self.compiled.get(connection)
        if compiled is None:
            queryset = self.build(KEY)
            compiler = queryset.query.get_compiler(connection=connection)
            compiled = self.compiled[connection] = _Compiled(
                compiler, using, self.keyed
            )
        return compiled


# The queries `compile_all` compiles (`Prepared(at_start=True)`).
AT_START: list[Prepared[Any]] = []


def compile_all(using: str = DEFAULT_DB_ALIAS) -> None:
    """Compile the `at_start` queries for this thread's connection. Run in the
    database thread as a process starts (`Runner.ensure_started`): a process's
    first question then spends no time in the compiler (about 8 ms for its
    reads, before the model server is asked). In a transaction because a
    locking read (`select_for_update`) compiles only in one; nothing runs."""
    with transaction.atomic(using):
        for prepared in AT_START:
            prepared._compiled(using)


def together(
    *reads: tuple[Prepared[Any], int], using: str = DEFAULT_DB_ALIAS
) -> list[list[Any]]:
    """The rows of each `(query, key)`, in order, as `Prepared.rows` gives them:
    on PostgreSQL with prepared statements on, in one trip to the server (a
    psycopg pipeline: the statements, and the transaction's BEGIN when the
    atomic block has not begun one yet, are sent at once and still run one
    after another, so a read after a locking one
    sees what the lock waited for). A question's reads before the model server
    is asked (the site's row locked, the tickets, the turn's, the history:
    `chat.models.admission.Line.read`) are one trip; three of them took about
    0.8 ms one after another on a quiet machine, 0.37 in one (docs/latency.md,
    rule 8). The trip starts with PLAN_ONCE.
    On SQLite, one after another on the driver's own connection: Django's
    cursor wrapper turned each query's `%s` into `?` again (a regular
    expression) through four calls, about a quarter of these reads' time.
    Elsewhere, and when Django logs queries (its tests count them) or a query
    wrapper watches them (`connection.execute_wrapper`), one after another
    through Django's cursors."""
    connection = connections[using]
    compiled = [(query._compiled(using), key) for query, key in reads]
    watched = connection.queries_logged or connection.execute_wrappers
    if not watched and connection.vendor == "sqlite":
        return _on_sqlite(connection, compiled)
    if watched or not _prepares(connection):
        return [c.run(key) for c, key in compiled]
    connection.validate_no_broken_transaction()
    raw = connection.connection
    planning = raw.cursor()
    cursors = [_preparing_cursor()(raw) for _ in compiled]
    with connection.wrap_database_errors:
        try:
            with _pipeline(raw, planning):
                planning.execute(PLAN_ONCE, prepare=False)
                for cursor, (c, key) in zip(cursors, compiled, strict=True):
                    cursor.execute(c.sql, c.params_for(key))
            return [
                c.converted(cursor.fetchall())
                for cursor, (c, _) in zip(cursors, compiled, strict=True)
            ]
        finally:
            for cursor in (planning, *cursors):
                cursor.close()


@contextmanager
def _pipeline(raw: Any, cursor: Any) -> Iterator[None]:
    """psycopg's pipeline on `raw`, with the transaction's BEGIN first in it
    (through `cursor`) when psycopg would send one before the next statement
    (Django's atomic block opened none on the server yet): `_begun_in`."""
    from psycopg.pq import TransactionStatus

    if raw.autocommit or raw.pgconn.transaction_status != TransactionStatus.IDLE:
        with raw.pipeline():
            yield
        return
    with _begun_in(raw, cursor):
        yield


@contextmanager
def _begun_in(raw: Any, cursor: Any) -> Iterator[None]:
    """A pipeline that begins the transaction itself. psycopg's own BEGIN would
    wait for the server's answer before anything else went, a trip of its
    own, and psycopg's public API has no way to send it with the statements
    after it. psycopg is left as its own BEGIN leaves it: the transaction
    open, its flag off, for Django's commit or rollback to end.

    The only use of psycopg's private names (psycopg 3.3): the BEGIN psycopg
    itself would send (`_get_tx_start_command`: the connection's isolation
    level and access mode), and the flag its `autocommit` setter refuses to
    turn off inside a transaction (`_autocommit`). A psycopg that changes them
    fails `test_psycopg_still_has_what_begun_in_borrows`
    (tests/models/test_compiled_queries.py)."""
    raw.autocommit = True  # so that psycopg sends no BEGIN of its own
    try:
        with raw.pipeline():
            cursor.execute(raw._get_tx_start_command(), prepare=False)
            yield
    finally:
        raw._autocommit = False


def _on_sqlite(
    connection: BaseDatabaseWrapper, compiled: list[tuple[_Compiled, int]]
) -> list[list[Any]]:
    """`together` on SQLite: the driver's connection runs each query's SQL as
    the driver takes it (`_Compiled.qmark_sql`), with the checks Django's
    cursor makes first (the thread, a broken transaction) and its errors."""
    connection.ensure_connection()
    connection.validate_thread_sharing()
    connection.validate_no_broken_transaction()
    raw = connection.connection
    with connection.wrap_database_errors:
        return [
            c.converted(raw.execute(c.qmark_sql, c.params_for(key)).fetchall())
            for c, key in compiled
        ]


def _cursor(connection: BaseDatabaseWrapper) -> CursorWrapper:
    """Django's cursor, or on PostgreSQL with prepared statements on, one that
    binds on the server and prepares what it runs, wrapped as Django wraps its
    own (its errors as Django's, a broken transaction refused, its queries
    logged when Django logs them)."""
    if not _prepares(connection):
        return connection.cursor()
    cursor = _preparing_cursor()(connection.connection)
    if connection.queries_logged:
        return _LoggedCursor(cursor, connection)
    return connection.make_cursor(cursor)


def _prepares(connection: BaseDatabaseWrapper) -> bool:
    """Whether this connection's statements are prepared on the server
    (PostgreSQL with `DATABASE_PREPARED` on); if so, connected, and checked to
    be this thread's, as Django checks before a cursor of its own."""
    if connection.vendor != "postgresql":
        return False
    connection.ensure_connection()
    if connection.connection.prepare_threshold is None:
        return False
    connection.validate_thread_sharing()
    return True


# PostgreSQL plans a prepared statement for its values on its first five
# executions (`plan_cache_mode`): about 0.9 ms each for the turn's read, on each
# pooled connection, so a process's first ten or so questions paid it in the trip
# before the model server is asked. These statements look rows up by their keys:
# one plan serves every key. Set for the rest of the transaction in the same
# trip as the reads (`together`): nothing is left on the connection (a pooler's
# next client, a rollback), and Django's own queries are never prepared anyway.
PLAN_ONCE = "SET LOCAL plan_cache_mode = force_generic_plan"


@functools.cache
def _preparing_cursor() -> type[Any]:
    """psycopg's own cursor (it binds on the server: Django's connections make
    client-binding ones), every statement prepared (imported when first used:
    psycopg is only there for PostgreSQL)."""
    import psycopg

    class PreparingCursor(psycopg.Cursor[Any]):
        def execute(self, query: Any, params: Any = None, **options: Any) -> Any:
            return super().execute(query, params, prepare=True)

    return PreparingCursor


class _LoggedCursor(CursorDebugWrapper):
    """A prepared statement's execution leaves psycopg no query text to log:
    its SQL is logged with its values in place, as Django logs those of a
    server-binding cursor (`last_executed_query`)."""

    def execute(self, sql: Any, params: Any = None) -> Any:
        with self.debug_sql(self.db.ops.compose_sql(sql, params), params):
            return CursorWrapper.execute(self, sql, params)


class _Compiled:
    def __init__(self, compiler: SQLCompiler, using: str, keyed: bool) -> None:
        sql, params = compiler.as_sql()  # fills select, klass_info, annotations
        if list(params).count(KEY) != int(keyed):
            raise ValueError("the key must be exactly one of the query's parameters")
        self.sql, self.params = sql, list(params)
        self.slot = self.params.index(KEY) if keyed else None
        self.compiler, self.using = compiler, using
        select, klass_info = compiler.select, compiler.klass_info
        self.converters = compiler.get_converters(
            [s[0] for s in select[: compiler.col_count]]
        )
        self.model: Any = compiler.query.model
        if klass_info is None:  # values_list: rows only
            return
        fields = klass_info["select_fields"]
        self.start, self.end = fields[0], fields[-1] + 1
        self.init_list = [f[0].target.attname for f in select[self.start : self.end]]
        # Django 5.2's signature (the stubs have a later one's).
        populators: Any = query.get_related_populators
        self.populators = populators(klass_info, select, using)
        self.annotations = dict(compiler.annotation_col_map)

    @functools.cached_property
    def qmark_sql(self) -> str:
        """The SQL as SQLite's driver takes it (`_on_sqlite`): rewritten once,
        by Django's own SQLite cursor, which rewrites it at every execute."""
        from django.db.backends.sqlite3.base import SQLiteCursorWrapper

        raw = self.compiler.connection.connection
        cursor: SQLiteCursorWrapper = raw.cursor(factory=SQLiteCursorWrapper)
        try:
            return cursor.convert_query(self.sql)
        finally:
            cursor.close()

    def run(self, key: int) -> list[Any]:
        with _cursor(self.compiler.connection) as cursor:
            cursor.execute(self.sql, self.params_for(key))
            return self.converted(cursor.fetchall())

    def params_for(self, key: int) -> list[Any]:
        if self.slot is None:
            return self.params
        params = list(self.params)
        params[self.slot] = key
        return params

    def converted(self, rows: list[Any]) -> list[Any]:
        if not self.converters:
            return rows
        return [tuple(r) for r in self.compiler.apply_converters(rows, self.converters)]

    def instance(self, row: Any) -> Any:
        obj = self.model.from_db(self.using, self.init_list, row[self.start : self.end])
        for populator in self.populators:
            populator.populate(row, obj)
        for name, position in self.annotations.items():
            setattr(obj, name, row[position])
        return obj
