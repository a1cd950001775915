"""An import's rows written in bulk, a few queries a batch: ids reserved
before the rows are made (so messages can name their parents), rows inserted
with every column as set, and columns set afterwards by primary key
(`chat.transfer.imports`)."""

from __future__ import annotations

from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections


def set_columns(model: Any, rows: list[Any], names: list[str]) -> None:
    """Write `names` of rows just inserted: one UPDATE by primary key, run for
    every row at once (executemany: psycopg pipelines it). Django's bulk_update
    builds a CASE per column over the whole batch, which is quadratic in the
    batch and made a 5,000-conversation import take minutes."""
    fields = [model._meta.get_field(name) for name in names]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(f.column)} = %s" for f in fields)
    sql = (
        f"UPDATE {quote(model._meta.db_table)} SET {assignments} "
        f"WHERE {quote(model._meta.pk.column)} = %s"
    )
    db = connections[DEFAULT_DB_ALIAS]
    preps = [(f.attname, f.get_db_prep_save) for f in fields]
    params = [
        [prep(getattr(row, name), db) for name, prep in preps] + [row.pk]
        for row in rows
    ]
    with db.cursor() as cursor:
        cursor.executemany(sql, params)


def reserve_ids(model: Any, count: int) -> list[int]:
    """`count` new ids of `model`'s table, taken before its rows are made."""
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id')) "
                "FROM generate_series(1, %s)",
                [table, count],
            )
            return [pk for (pk,) in cursor.fetchall()]
        # SQLite: this transaction already wrote the conversations, so it holds
        # the database's write lock and no one else takes these ids before it
        # commits; above the AUTOINCREMENT sequence, so no deleted id is reused.
        cursor.execute(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = %s), 0),"
            f" coalesce((SELECT max(id) FROM {connection.ops.quote_name(table)}), 0))",
            [table],
        )
        (last,) = cursor.fetchone()
    return list(range(last + 1, last + 1 + count))


def insert_rows(model: Any, rows: list[Any]) -> None:
    """INSERT every column of `rows` as set, ids and auto_now times included
    (bulk_create would put the time of the import in those)."""
    fields = model._meta.concrete_fields
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({marks})"
    db = connections[DEFAULT_DB_ALIAS]  # once: `connection` is a proxy
    preps = [(f.attname, f.get_db_prep_save) for f in fields]
    params = [[prep(getattr(row, name), db) for name, prep in preps] for row in rows]
    with db.cursor() as cursor:
        cursor.executemany(sql, params)
