"""The sidebar's lists: a user's conversations by last activity, a page at a time.

Keyset paging on (updated_at, id), never OFFSET: a page is the `page_size()`
conversations just below a cursor, read along the `conversation_sidebar` index
(owner, listed, archived_at, -updated_at, -id) (chat.models.conversations), so
the page that reaches conversation 5,000 costs what the first one does.

What is listed: the owner's conversations with at least one message (a new one
that never got a message is not listed, and is deleted after a day:
`delete_empty`), not archived; pinned ones on top, filed ones under their
folder, the rest under date groups (`date_group`) in the site's time zone.

Filing (pin, archive, folder) is set with `.update()`: it is not activity, so
`updated_at` (auto_now) and the conversation's place by date do not change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext_lazy as _

from chat.models.conversations import Conversation
from chat.models.folders import Folder
from chat.models.messages import Message

# How long an empty conversation is kept: long enough for a tab left open on
# one overnight, short enough that they do not pile up.
EMPTY_KEPT_FOR = timedelta(days=1)

# Headings in the active language (static/chat/sidebar.js names "Today" with
# the same translation when it moves an entry there).
TODAY = _("Today")
YESTERDAY = _("Yesterday")
WEEK = _("Previous 7 days")
MONTH = _("Previous 30 days")


def page_size() -> int:
    return int(settings.SIDEBAR_PAGE_SIZE)


def date_group(moment: datetime, now: datetime | None = None) -> str:
    """The heading a conversation last active at `moment` is listed under, in
    the current time zone (the site's TIME_ZONE): Today, Yesterday, Previous 7
    days, Previous 30 days, then its month ("November 2026")."""
    today = timezone.localdate(now or timezone.now())
    day = timezone.localdate(moment)
    days = (today - day).days
    if days <= 0:  # (a clock a little ahead counts as today)
        return str(TODAY)
    if days == 1:
        return str(YESTERDAY)
    if days <= 7:
        return str(WEEK)
    if days <= 30:
        return str(MONTH)
    return month_label(day)


def month_label(day: date) -> str:
    return date_format(day, "YEAR_MONTH_FORMAT")


_CURSOR = re.compile(r"([0-9]{1,17})-([0-9]{1,18})")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros(moment: datetime) -> int:
    """Microseconds since 1970: exact, and below 2**53 (a JavaScript number,
    which the page sorts moved items by)."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@dataclass(frozen=True)
class Cursor:
    """A place in a list: the last conversation shown, by its sort time and id."""

    moment: datetime
    pk: int

    def __str__(self) -> str:
        return f"{micros(self.moment)}-{self.pk}"

    @classmethod
    def parse(cls, text: str) -> Cursor | None:
        """The cursor `str` wrote, or None for anything else."""
        match = _CURSOR.fullmatch(text)
        if match is None:
            return None
        try:
            moment = _EPOCH + timedelta(microseconds=int(match[1]))
        except OverflowError:
            return None
        return cls(moment, int(match[2]))


SortField = Literal["updated_at", "archived_at"]


@dataclass(frozen=True)
class SidebarPage:
    items: list[Conversation]  # newest first
    next: Cursor | None  # where the next page starts; None at the end
    field: SortField = "updated_at"

    def cursor_of(self, item: Conversation) -> Cursor:
        moment = getattr(item, self.field)
        assert isinstance(moment, datetime)
        return Cursor(moment, item.pk)


def with_messages() -> Exists:
    return Exists(Message.objects.filter(conversation=OuterRef("pk")))


def listed(owner: Any) -> QuerySet[Conversation]:
    """The owner's conversations the sidebar may show: in their list (not
    answers asked over the API alone) and with at least one message."""
    return Conversation.objects.filter(with_messages(), owner=owner, listed=True)


def dated(owner: Any) -> QuerySet[Conversation]:
    """Listed under the date groups: not archived, pinned or filed."""
    return listed(owner).filter(
        archived_at__isnull=True, pinned_at__isnull=True, folder__isnull=True
    )


def pinned(owner: Any) -> QuerySet[Conversation]:
    """The "Pinned" group, the last pinned first (a user pins a handful: all)."""
    return (
        listed(owner)
        .filter(archived_at__isnull=True, pinned_at__isnull=False)
        .order_by("-pinned_at", "-pk")
    )


def in_folder(owner: Any, folder: Folder) -> QuerySet[Conversation]:
    return listed(owner).filter(
        archived_at__isnull=True, pinned_at__isnull=True, folder=folder
    )


def archived(owner: Any) -> QuerySet[Conversation]:
    return listed(owner).filter(archived_at__isnull=False)


def page(
    rows: QuerySet[Conversation],
    after: Cursor | None = None,
    *,
    field: SortField = "updated_at",
    size: int | None = None,
) -> SidebarPage:
    """The `size` rows of `rows` just after `after` (from the newest if None)
    by `field` then id, both descending; with the cursor of the next page.

    The bound is written `field <= t AND (field < t OR id < pk)`: the first
    half is a range on the index, so the scan starts at the cursor instead of
    reading (and filtering) every row above it, as a lone OR would."""
    size = size or page_size()
    if field == "updated_at":
        # The index's leading columns first: `rows` holds them constant (one
        # owner, listed, archived_at null), but PostgreSQL's planner only
        # knows that from an ORDER BY naming them, else it sorts every row.
        rows = rows.order_by("owner_id", "listed", "archived_at", "-updated_at", "-pk")
    else:
        rows = rows.order_by(f"-{field}", "-pk")
    if after is not None:
        rows = rows.filter(
            Q(**{f"{field}__lt": after.moment}) | Q(pk__lt=after.pk),
            **{f"{field}__lte": after.moment},
        )
    found = list(rows[: size + 1])
    items = found[:size]
    shown = SidebarPage(items, None, field)
    if len(found) > size:
        return SidebarPage(items, shown.cursor_of(items[-1]), field)
    return shown


def sidebar_page(owner: Any, after: Cursor | None = None) -> SidebarPage:
    """One page of the date-grouped list (what the sidebar loads as it is
    scrolled, `chat.web.sidebar.views.sidebar_page`)."""
    return page(dated(owner), after)


def empty(owner: Any | None = None) -> QuerySet[Conversation]:
    """Conversations that never got a message (an answer being written has
    its question stored already: not empty), in people's lists."""
    rows = Conversation.objects.filter(~with_messages(), listed=True)
    return rows if owner is None else rows.filter(owner=owner)


def delete_empty(owner: Any | None = None, now: datetime | None = None) -> int:
    """Delete the empty conversations (of `owner`, or everyone's) not touched
    for `EMPTY_KEPT_FOR`; how many were deleted.

    By `updated_at`, and under row locks that skip rows someone holds: a first
    question being stored (`chat.models.turn_rows`) locks the row and bumps
    `updated_at`, so its conversation is never taken for an old empty one."""
    cutoff = (now or timezone.now()) - EMPTY_KEPT_FOR
    with transaction.atomic():
        old = empty(owner).filter(updated_at__lt=cutoff)
        ids = list(old.select_for_update(skip_locked=True).values_list("pk", flat=True))
        if not ids:
            return 0
        Conversation.objects.filter(pk__in=ids).delete()
    return len(ids)


def fresh_conversation(owner: Any) -> Conversation:
    """What "New conversation" opens: the owner's empty one if they have one
    (they do not pile up), else a new one; their old empty ones are cleaned
    up on the way."""
    delete_empty(owner)
    reuse = empty(owner).filter(archived_at__isnull=True).order_by("-pk").first()
    return reuse or Conversation.start(owner)


# Filing: pin, archive, folder. Not activity (see the module's docstring).


def _file(owner: Any, pk: int, **fields: Any) -> Conversation | None:
    """Set `fields` on the owner's listed conversation `pk` without touching
    `updated_at`; the conversation, or None if they have no such one."""
    rows = Conversation.objects.filter(pk=pk, owner=owner, listed=True)
    if not rows.update(**fields):
        return None
    return rows.first()


def pin(owner: Any, pk: int) -> Conversation | None:
    return _file(owner, pk, pinned_at=timezone.now())


def unpin(owner: Any, pk: int) -> Conversation | None:
    return _file(owner, pk, pinned_at=None)


def archive(owner: Any, pk: int) -> Conversation | None:
    """Out of the list (its pin and folder are kept for when it is restored)."""
    return _file(owner, pk, archived_at=timezone.now())


def restore(owner: Any, pk: int) -> Conversation | None:
    return _file(owner, pk, archived_at=None)


def move(owner: Any, pk: int, folder: Folder | None) -> Conversation | None:
    """Into one of the owner's folders (None: back to the list). A pinned one
    is unpinned: it goes where it was put."""
    if folder is not None and folder.owner_id != owner.pk:
        raise ValueError("a folder of someone else")
    return _file(owner, pk, folder=folder, pinned_at=None)
