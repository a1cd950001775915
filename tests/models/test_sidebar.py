"""The sidebar's lists (chat.models.sidebar): date groups, keyset pages, what
is listed, and the empty conversations that are reused and cleaned up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat.models import Conversation, Folder
from chat.models import sidebar as sb
from chat.models.sidebar import Cursor, date_group

pytestmark = pytest.mark.django_db


def at(*args: int, tz: str = "UTC") -> datetime:
    from zoneinfo import ZoneInfo

    return datetime(*args, tzinfo=ZoneInfo(tz))


def talk(owner, title: str, when: datetime | None = None, **fields) -> Conversation:
    """A conversation with one question, last active `when`."""
    conversation = Conversation.objects.create(owner=owner, title=title, **fields)
    conversation.messages.create(role="user", content=title)
    if when is not None:
        Conversation.objects.filter(pk=conversation.pk).update(updated_at=when)
        conversation.refresh_from_db()
    return conversation


# Date groups ---------------------------------------------------------------


@pytest.mark.smoke
@pytest.mark.parametrize(
    ("moment", "group"),
    [
        (at(2026, 12, 4, 0, 0, 0), "Today"),  # midnight starts today
        (at(2026, 12, 3, 23, 59, 59), "Yesterday"),  # the second before
        (at(2026, 12, 3, 0, 0, 0), "Yesterday"),
        (at(2026, 12, 2, 23, 59, 59), "Previous 7 days"),
        (at(2026, 11, 27, 0, 0, 0), "Previous 7 days"),  # 7 days ago
        (at(2026, 11, 26, 23, 59, 59), "Previous 30 days"),
        (at(2026, 11, 4, 0, 0, 0), "Previous 30 days"),  # 30 days ago
        (at(2026, 11, 3, 23, 59, 59), "November 2026"),
        (at(2026, 10, 31, 23, 59, 59), "October 2026"),  # the month changes
        (at(2025, 12, 31, 23, 59, 59), "December 2025"),  # and the year
        (at(2026, 12, 4, 12, 0, 0), "Today"),  # a clock a little ahead
    ],
)
def test_date_groups_by_calendar_day(moment, group):
    now = at(2026, 12, 4, 9, 30)
    assert date_group(moment, now) == group


@pytest.mark.smoke
def test_date_groups_are_days_of_the_sites_time_zone(settings):
    """23:30 UTC on Dec 3 is already Dec 4 in Paris: today there, yesterday in
    UTC; and a month's last evening in New York is the next month in UTC."""
    now = at(2026, 12, 4, 9, 0)
    late = at(2026, 12, 3, 23, 30)
    assert date_group(late, now) == "Yesterday"
    settings.TIME_ZONE = "Europe/Paris"
    with timezone.override("Europe/Paris"):
        assert date_group(late, now) == "Today"
    new_years_eve = at(2025, 12, 31, 22, 0, tz="America/New_York")  # Jan 1 UTC
    assert date_group(new_years_eve, now) == "January 2026"
    with timezone.override("America/New_York"):
        assert date_group(new_years_eve, now) == "December 2025"


def test_the_first_days_of_a_year_still_reach_back_into_the_last():
    now = at(2027, 1, 2, 8, 0)
    assert date_group(at(2027, 1, 1, 23, 0), now) == "Yesterday"
    assert date_group(at(2026, 12, 31, 23, 59), now) == "Previous 7 days"
    assert date_group(at(2026, 12, 1, 0, 0), now) == "December 2026"


# Cursors -------------------------------------------------------------------


@pytest.mark.smoke
def test_a_cursor_reads_back_what_it_wrote_to_the_microsecond():
    cursor = Cursor(datetime(2026, 12, 4, 3, 5, 6, 123456, tzinfo=UTC), 42)
    assert str(cursor) == "1796353506123456-42"
    assert Cursor.parse(str(cursor)) == cursor


@pytest.mark.parametrize(
    "text",
    [
        "",
        "abc",
        "1-",
        "-1",
        "1.5-2",
        "1-2-3",
        "１２-3",
        " 1-2",
        "1-2\n",
        "9" * 40 + "-1",
    ],
)
def test_anything_else_is_not_a_cursor(text):
    assert Cursor.parse(text) is None


# Pages ---------------------------------------------------------------------


def everything(owner, size: int) -> list[list[int]]:
    """The pages of the date-grouped list, following each page's cursor."""
    pages, after = [], None
    while True:
        found = sb.page(sb.dated(owner), after, size=size)
        pages.append([c.pk for c in found.items])
        if found.next is None:
            return pages
        after = found.next


@pytest.mark.smoke
def test_pages_follow_activity_and_reach_the_last_conversation(alice):
    start = timezone.now() - timedelta(days=400)
    made = [talk(alice, f"c{n}", start + timedelta(hours=n)) for n in range(23)]
    pages = everything(alice, size=5)
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3]
    assert sum(pages, []) == [c.pk for c in reversed(made)]


@pytest.mark.smoke
def test_a_page_boundary_between_equal_times_loses_and_repeats_nothing(alice):
    """Conversations imported together share an updated_at: id breaks ties."""
    moment = timezone.now() - timedelta(days=3)
    made = [talk(alice, f"c{n}", moment) for n in range(7)]
    pages = everything(alice, size=3)
    assert sum(pages, []) == sorted((c.pk for c in made), reverse=True)


def test_a_page_reads_only_its_rows_and_one_more(alice):
    for n in range(12):
        talk(alice, f"c{n}")
    with CaptureQueriesContext(connection) as queries:
        found = sb.page(sb.dated(alice), size=4)
    assert len(found.items) == 4 and found.next is not None
    (query,) = queries.captured_queries
    assert "LIMIT 5" in query["sql"] and "OFFSET" not in query["sql"]


def test_a_later_page_is_read_along_the_sidebar_index_on_postgresql(
    alice, bob, settings
):
    """No sort of the owner's rows and no scan above the cursor: the plan
    walks `conversation_sidebar` from the cursor on (the bench measures it)."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's plan (the PostgreSQL run has this test)")
    for n in range(30):
        talk(alice if n % 2 else bob, f"c{n}")
    settings.SIDEBAR_PAGE_SIZE = 3
    first = sb.sidebar_page(alice)
    with CaptureQueriesContext(connection) as queries:
        sb.sidebar_page(alice, first.next)
    sql = queries.captured_queries[0]["sql"]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE chat_conversation")
        # 30 rows: a sequential or bitmap scan and a sort would win, and which
        # one depends on the statistics; what is asked here is whether the
        # index can give the page in order from the cursor on.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("EXPLAIN " + sql)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert first.items
    assert "Index Scan using conversation_sidebar" in plan, plan
    assert "Sort" not in plan, plan
    index_cond = plan.split("Index Cond: ", 1)[1].split("\n", 1)[0]
    assert "updated_at <=" in index_cond, plan


@pytest.mark.smoke
def test_the_list_leaves_out_empty_unlisted_archived_pinned_and_filed(alice, bob):
    kept = talk(alice, "kept")
    Conversation.objects.create(owner=alice, title="never asked")
    talk(alice, "over the api", listed=False)
    talk(alice, "archived", archived_at=timezone.now())
    pin = talk(alice, "pinned", pinned_at=timezone.now())
    folder = Folder.objects.create(owner=alice, name="Work")
    filed = talk(alice, "filed", folder=folder)
    talk(bob, "bob's")
    assert [c.pk for c in sb.sidebar_page(alice).items] == [kept.pk]
    assert list(sb.pinned(alice)) == [pin]
    assert list(sb.in_folder(alice, folder)) == [filed]
    assert [c.title for c in sb.archived(alice)] == ["archived"]


def test_pinned_ones_come_last_pinned_first(alice):
    now = timezone.now()
    older = talk(alice, "a", pinned_at=now - timedelta(hours=1))
    newer = talk(alice, "b", pinned_at=now)
    assert list(sb.pinned(alice)) == [newer, older]


def test_archived_pages_go_by_when_archived(alice):
    now = timezone.now()
    made = [
        talk(alice, f"c{n}", archived_at=now - timedelta(minutes=n)) for n in range(5)
    ]
    first = sb.page(sb.archived(alice), field="archived_at", size=3)
    assert first.items == made[:3]
    second = sb.page(sb.archived(alice), first.next, field="archived_at", size=3)
    assert second.items == made[3:] and second.next is None


# Empty conversations -------------------------------------------------------


@pytest.mark.smoke
def test_new_conversation_reuses_the_empty_one(alice, bob):
    first = sb.fresh_conversation(alice)
    assert sb.fresh_conversation(alice) == first
    assert sb.fresh_conversation(bob) != first  # never someone else's
    first.messages.create(role="user", content="hello")
    second = sb.fresh_conversation(alice)
    assert second != first
    assert Conversation.objects.filter(owner=alice).count() == 2


def test_an_archived_empty_one_is_not_reused(alice):
    first = sb.fresh_conversation(alice)
    Conversation.objects.filter(pk=first.pk).update(archived_at=timezone.now())
    assert sb.fresh_conversation(alice) != first


@pytest.mark.smoke
def test_empty_ones_are_deleted_after_a_day_and_nothing_else(alice, bob):
    day_ago = timezone.now() - timedelta(days=1, minutes=1)
    old_empty = Conversation.objects.create(owner=alice)
    recent_empty = Conversation.objects.create(owner=alice)
    old_talk = talk(alice, "asked", day_ago)
    # An answer being written: its question is stored, so it is not empty.
    writing = Conversation.objects.create(owner=alice)
    question = writing.messages.create(role="user", content="q")
    writing.messages.create(
        role="assistant", status="streaming", parent=question, content=""
    )
    api_only = Conversation.objects.create(owner=alice, listed=False)
    bobs_empty = Conversation.objects.create(owner=bob)
    Conversation.objects.filter(
        pk__in=[old_empty.pk, writing.pk, api_only.pk, bobs_empty.pk]
    ).update(updated_at=day_ago)

    assert sb.delete_empty(alice) == 1
    left = set(Conversation.objects.values_list("pk", flat=True))
    assert old_empty.pk not in left
    assert {
        recent_empty.pk,
        old_talk.pk,
        writing.pk,
        api_only.pk,
        bobs_empty.pk,
    } <= left
    assert sb.delete_empty() == 1  # everyone's: bob's
    assert not Conversation.objects.filter(pk=bobs_empty.pk).exists()


def test_making_a_new_one_cleans_up_the_owners_old_empty_ones(alice):
    old = Conversation.objects.create(owner=alice)
    Conversation.objects.filter(pk=old.pk).update(
        updated_at=timezone.now() - timedelta(days=2)
    )
    fresh = sb.fresh_conversation(alice)
    assert fresh != old and not Conversation.objects.filter(pk=old.pk).exists()


def test_filing_does_not_count_as_activity(alice):
    conversation = talk(alice, "kept", timezone.now() - timedelta(days=3))
    before = conversation.updated_at
    folder = Folder.objects.create(owner=alice, name="Work")
    sb.pin(alice, conversation.pk)
    sb.unpin(alice, conversation.pk)
    sb.archive(alice, conversation.pk)
    sb.restore(alice, conversation.pk)
    sb.move(alice, conversation.pk, folder)
    conversation.refresh_from_db()
    assert conversation.updated_at == before and conversation.folder == folder
