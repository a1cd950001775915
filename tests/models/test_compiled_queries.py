"""A query compiled once and run again (`chat.models.compiled_queries`): the same
objects as the ORM's own `get`, on SQLite and PostgreSQL."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest.mock import patch

import pytest
from django.db import (
    DataError,
    IntegrityError,
    connection,
    connections,
    transaction,
)
from django.db.models import Count, F, Value
from django.db.models.sql.compiler import SQLCompiler
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from chat.models import (
    Attachment,
    Conversation,
    ModelProfile,
    SiteDefaults,
    compiled_queries,
    turn_rows,
)
from chat.models.admission import TICKETS
from chat.models.compiled_queries import Prepared
from chat.models.site import LOCKED_SITE_ROW, SITE_ROW
from chat.models.turn_rows.rows import EARLIER, TURN_READ, _turn_read

pytestmark = pytest.mark.django_db


def test_the_turn_read_gives_what_the_orm_gives(
    alice: Any, thinker: ModelProfile, answered: Conversation
) -> None:
    answered.model_profile = thinker
    answered.save()
    other = Conversation.objects.create(owner=alice, title="Other")
    with transaction.atomic():
        for pk in (answered.pk, other.pk, answered.pk):
            ours = TURN_READ.get(pk)
            orm = _turn_read(pk).get()
            assert ours.__dict__.keys() - {"_state"} == orm.__dict__.keys() - {"_state"}
            for name in ("title", "owner_id", "model_profile_id", "updated_at"):
                assert getattr(ours, name) == getattr(orm, name)
            for fact in ("busy", "sent_files", "on_teams", "model_allowed"):
                assert getattr(ours, fact) is getattr(orm, fact)
            # The related rows came with it: no query for them.
            with CaptureQueriesContext(connection) as queries:
                assert ours.owner.username == "alice"
                profile = ours.model_profile
            assert len(queries) == 0
            assert (profile and profile.tag) == (orm.model_profile and thinker.tag)
            assert not ours._state.adding and ours._state.db == "default"


def test_it_compiles_once_and_reads_once(alice: Any, answered: Conversation) -> None:
    with transaction.atomic():
        TURN_READ.get(answered.pk)
        compiled = TURN_READ.compiled[connections["default"]]
        with CaptureQueriesContext(connection) as queries:
            TURN_READ.get(answered.pk)
        assert TURN_READ.compiled[connections["default"]] is compiled
    assert len(queries) == 1
    assert str(answered.pk) in queries[0]["sql"]
    if connection.vendor == "postgresql":
        assert "FOR UPDATE OF" in queries[0]["sql"]


def prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def on_postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's prepared statements (the PostgreSQL run has this)")


def test_on_postgresql_its_statement_is_prepared_once_per_connection(
    answered: Conversation,
) -> None:
    on_postgresql()
    with transaction.atomic():
        for _ in range(3):
            assert TURN_READ.get(answered.pk).pk == answered.pk
        # The ORM's own queries, however often they run, are not.
        for _ in range(8):
            Conversation.objects.filter(pk=answered.pk).exists()
    ours = [
        s for s in prepared_statements() if 'FOR UPDATE OF "chat_conversation"' in s
    ]
    assert len(ours) == 1
    assert "$1" in ours[0]
    assert not [
        s for s in prepared_statements() if "LIMIT 1" in s and "EXISTS" not in s
    ]


@pytest.mark.django_db(transaction=True)  # each read's transaction its own
def test_on_postgresql_reads_together_are_planned_once_for_every_key(
    answered: Conversation,
) -> None:
    """PostgreSQL would plan a prepared statement again for its values on its
    first five executions (0.9 ms each for the turn's read, on every pooled
    connection); `together` has it planned once, in the same trip, for the
    transaction only."""
    on_postgresql()
    titled = Prepared(
        lambda pk: Conversation.objects.filter(pk=pk, title__startswith="zz-once")
    )
    known = prepared_statements()
    for _ in range(3):
        with transaction.atomic():
            assert compiled_queries.together((titled, answered.pk)) == [[]]
    (new,) = set(prepared_statements()) - set(known)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
            " WHERE statement = %s",
            [new],
        )
        assert cursor.fetchall() == [(3, 0)]
        cursor.execute("SHOW plan_cache_mode")  # the connection's own is kept
        assert cursor.fetchone() == ("auto",)


def test_with_prepared_statements_off_it_runs_unprepared(
    answered: Conversation,
) -> None:
    """DATABASE_PREPARED=false (behind a pooler that cannot keep them)."""
    on_postgresql()
    connection.ensure_connection()
    raw = connection.connection
    raw.prepare_threshold, before = None, raw.prepare_threshold
    titled = Prepared(
        lambda pk: Conversation.objects.filter(pk=pk, title__startswith="zz-off")
    )
    known = prepared_statements()
    try:
        for _ in range(3):
            assert titled.rows(answered.pk) == []
    finally:
        raw.prepare_threshold = before
    assert prepared_statements() == known
    titled.rows(answered.pk)  # (the test can tell: on, it is prepared)
    assert len(prepared_statements()) == len(known) + 1


def test_a_prepared_statements_error_is_djangos(answered: Conversation) -> None:
    """What the ORM's callers catch (a turn not stored, said to the page)."""
    on_postgresql()  # (SQLite's division by zero is NULL, not an error)
    divided = Prepared(
        lambda pk: Conversation.objects.annotate(
            zero=Value(1) / (F("pk") - F("id"))
        ).filter(pk=pk)
    )
    with pytest.raises(DataError, match="division by zero"), transaction.atomic():
        divided.get(answered.pk)


def test_a_missing_row_raises_does_not_exist(alice: Any) -> None:
    with transaction.atomic(), pytest.raises(Conversation.DoesNotExist):
        TURN_READ.get(10**9)


def test_annotations_are_set_on_the_object(answered: Conversation) -> None:
    counted = Prepared(
        lambda pk: Conversation.objects.annotate(n=Count("messages")).filter(pk=pk)
    )
    assert counted.get(answered.pk).n == 4  # type: ignore[attr-defined]


def test_a_query_without_the_key_exactly_once_is_refused(alice: Any) -> None:
    twice = Prepared(lambda pk: Conversation.objects.filter(pk=pk, owner_id=pk))
    with pytest.raises(ValueError, match="exactly one"):
        twice.get(1)


def test_a_turn_without_files_builds_no_query_for_them(
    alice: Any, thinker: ModelProfile
) -> None:
    """The count of its files is read before the model server is asked, and
    its frame is drawn on the event loop: neither may build SQL for them."""
    conversation = Conversation.objects.create(owner=alice, model_profile=thinker)
    compiled: list[type] = []
    as_sql = SQLCompiler.as_sql

    def spy(self: SQLCompiler, *args: Any, **kwargs: Any) -> Any:
        compiled.append(self.query.model)
        return as_sql(self, *args, **kwargs)

    with patch.object(SQLCompiler, "as_sql", spy):
        with (
            transaction.atomic()
        ):  # as the socket's turn (`chat.live.engine.turn.beginning`)
            turn = turn_rows.begin_turn_of(conversation.pk, "Hello", "c")
        assert turn.question.files == []
    assert compiled  # the spy sees the turn's own queries
    assert Attachment not in compiled


def test_compile_all_compiles_every_query_and_runs_none(answered: Conversation) -> None:
    """What a process does as it starts (`Runner.ensure_started`): its first
    question then finds the turn's reads compiled."""
    default = connections["default"]
    assert {TURN_READ, EARLIER, TICKETS, SITE_ROW, LOCKED_SITE_ROW} <= set(
        compiled_queries.AT_START
    )
    for query in compiled_queries.AT_START:
        query.compiled.pop(default, None)
    with CaptureQueriesContext(connection) as queries:
        compiled_queries.compile_all()
    assert not [q for q in queries if q["sql"].lstrip().upper().startswith("SELECT")]
    assert all(default in query.compiled for query in compiled_queries.AT_START)
    compiled = TURN_READ.compiled[default]
    with transaction.atomic():
        assert TURN_READ.get(answered.pk).pk == answered.pk
    assert TURN_READ.compiled[default] is compiled


def the_turns_reads(conversation: Conversation) -> list[tuple[Prepared[Any], int]]:
    """A question's first reads (`Conversation.begin_turn_of`, `Line.read`)."""
    return [
        (LOCKED_SITE_ROW, 1),
        (TICKETS, 0),
        (TURN_READ, conversation.pk),
        (EARLIER, conversation.pk),
    ]


def test_together_gives_what_each_read_gives(answered: Conversation) -> None:
    SiteDefaults.load()
    reads = the_turns_reads(answered)
    with transaction.atomic():
        apart = [query.rows(key) for query, key in reads]
        at_once = compiled_queries.together(*reads)
    assert at_once == apart
    assert [len(rows) for rows in at_once] == [1, 0, 1, 4]
    assert TURN_READ.one(at_once[2]).title == "Kept"


@pytest.mark.smoke  # and on SQLite, where the driver's own connection reads
def test_together_reads_past_djangos_cursors_when_nothing_watches(
    answered: Conversation,
) -> None:
    """On SQLite the driver's connection runs the reads (Django's cursor wrapper
    rewrote each query's placeholders again); on PostgreSQL, the pipeline's
    cursors. The rows are the same as Django's cursors give."""
    SiteDefaults.load()
    reads = the_turns_reads(answered)
    djangos = patch.object(connection, "cursor", side_effect=AssertionError("cursor"))
    with transaction.atomic():
        apart = [query.rows(key) for query, key in reads]
        with djangos:
            at_once = compiled_queries.together(*reads)
    assert at_once == apart
    assert TURN_READ.one(at_once[2]).title == "Kept"


@pytest.mark.smoke
def test_together_in_a_broken_transaction_is_refused_as_django_refuses_it(
    answered: Conversation,
) -> None:
    """A read after a failed statement of the same atomic block is refused, as
    a query through Django's cursor is, and nothing is read."""
    SiteDefaults.load()
    with transaction.atomic():
        with pytest.raises(IntegrityError), transaction.atomic(savepoint=False):
            SiteDefaults.objects.create(pk=1)
        with pytest.raises(TransactionManagementError):
            compiled_queries.together(*the_turns_reads(answered))


def traced_together(answered: Conversation, tmp_path: Path) -> list[tuple[str, str]]:
    """libpq's own trace of `together` reading the turn in an atomic block:
    (F for sent or B for received, the message's name)."""
    on_postgresql()
    SiteDefaults.load()
    connection.ensure_connection()
    pgconn = connection.connection.pgconn
    trace = tmp_path / "libpq.trace"
    with trace.open("w") as out, transaction.atomic():
        pgconn.trace(out.fileno())
        try:
            compiled_queries.together(*the_turns_reads(answered))
        finally:
            pgconn.untrace()
    # Each line: a timestamp, F (sent) or B (received), a length, the message.
    return [
        (fields[1], fields[3].split(" ")[0])
        for fields in (line.split("\t") for line in trace.read_text().splitlines())
    ]


def one_trip(messages: list[tuple[str, str]]) -> bool:
    """Every message sent before the server's first answer came back."""
    sent = [i for i, (way, _) in enumerate(messages) if way == "F"]
    received = [i for i, (way, _) in enumerate(messages) if way == "B"]
    return bool(received) and max(sent) < min(received)


def test_on_postgresql_together_sends_every_read_before_the_first_answer(
    answered: Conversation, tmp_path: Path
) -> None:
    """One trip, in a transaction already begun (the test's own)."""
    messages = traced_together(answered, tmp_path)
    # The plans' mode for the transaction (PLAN_ONCE), then the four reads.
    assert [what for way, what in messages if way == "F"].count("Execute") == 5
    assert one_trip(messages)
    assert "DataRow" in [what for way, what in messages if way == "B"]


@pytest.mark.django_db(transaction=True)
def test_on_postgresql_together_begins_the_transaction_in_the_same_trip(
    answered: Conversation, tmp_path: Path
) -> None:
    """An atomic block's first statements: its BEGIN goes with the reads
    (psycopg's own would have waited for the server's answer to it)."""
    messages = traced_together(answered, tmp_path)
    # BEGIN, the plans' mode for the transaction (PLAN_ONCE), the four reads.
    assert [what for way, what in messages if way == "F"].count("Execute") == 6
    assert one_trip(messages)


@pytest.mark.django_db(transaction=True)
def test_the_transaction_together_begins_is_the_connections_own(
    answered: Conversation,
) -> None:
    """The BEGIN sent with the reads opens the atomic block's transaction, at
    the connection's isolation level, and leaves psycopg as its own would:
    the block's writes commit or roll back with it."""
    on_postgresql()
    from psycopg import IsolationLevel
    from psycopg.pq import TransactionStatus

    SiteDefaults.load()
    connection.ensure_connection()
    raw = connection.connection
    raw.isolation_level, before = IsolationLevel.SERIALIZABLE, raw.isolation_level
    try:
        with pytest.raises(RuntimeError), transaction.atomic():
            compiled_queries.together(*the_turns_reads(answered))
            assert raw.pgconn.transaction_status == TransactionStatus.INTRANS
            assert raw.autocommit is False
            with connection.cursor() as cursor:
                cursor.execute("SELECT current_setting('transaction_isolation')")
                assert cursor.fetchone() == ("serializable",)
            Conversation.objects.filter(pk=answered.pk).update(title="rolled back")
            raise RuntimeError
        assert raw.pgconn.transaction_status == TransactionStatus.IDLE
        answered.refresh_from_db()
        assert answered.title != "rolled back"
        with transaction.atomic():
            compiled_queries.together(*the_turns_reads(answered))
            Conversation.objects.filter(pk=answered.pk).update(title="committed")
        answered.refresh_from_db()
        assert answered.title == "committed"
    finally:
        raw.isolation_level = before


def test_together_runs_one_after_another_with_prepared_statements_off(
    answered: Conversation,
) -> None:
    on_postgresql()
    SiteDefaults.load()
    connection.ensure_connection()
    raw = connection.connection
    raw.prepare_threshold, before = None, raw.prepare_threshold
    try:
        pipeline = patch.object(raw, "pipeline", side_effect=AssertionError("piped"))
        with pipeline, transaction.atomic():
            rows = compiled_queries.together(*the_turns_reads(answered))
    finally:
        raw.prepare_threshold = before
    assert [len(r) for r in rows] == [1, 0, 1, 4]


@pytest.mark.django_db(transaction=True)  # the block's BEGIN goes with the reads
def test_an_error_of_a_read_together_is_djangos_and_the_connection_goes_on(
    answered: Conversation,
) -> None:
    on_postgresql()
    divided = Prepared(
        lambda pk: Conversation.objects.annotate(
            zero=Value(1) / (F("pk") - F("id"))
        ).filter(pk=pk)
    )
    with pytest.raises(DataError, match="division by zero"), transaction.atomic():
        compiled_queries.together((EARLIER, answered.pk), (divided, answered.pk))
    with transaction.atomic():
        assert len(compiled_queries.together((EARLIER, answered.pk))[0]) == 4


def test_psycopg_still_has_what_begun_in_borrows() -> None:
    """`compiled_queries._begun_in` uses two private names of psycopg to send
    a transaction's BEGIN in the same trip as the reads after it. If this
    fails after an upgrade of psycopg, read that function's docstring: find
    the new names, or let psycopg send its own BEGIN (a trip more)."""
    psycopg = pytest.importorskip("psycopg")
    from psycopg import IsolationLevel

    connection_class = psycopg.Connection
    # The BEGIN psycopg sends, from the connection's settings.
    settings = SimpleNamespace(
        _begin_statement=b"",
        isolation_level=IsolationLevel.SERIALIZABLE,
        read_only=True,
        deferrable=None,
    )
    begin = connection_class._get_tx_start_command(settings)
    assert begin == b"BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY"
    # The flag: what `autocommit` reads, and what decides whether psycopg
    # begins a transaction before a statement.
    flag = SimpleNamespace(_autocommit="the flag")
    assert connection_class.autocommit.fget(flag) == "the flag"
    assert "self._autocommit" in inspect.getsource(connection_class._start_query)
