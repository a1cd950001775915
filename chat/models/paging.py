"""Conversation pages show the newest messages; older ones come a page at a time.

Keyset paging by message id, never OFFSET: a page is the `page_size()` messages
just below a cursor, read backwards along the (conversation, id) index, so the
newest page of a 100,000-message conversation costs what a 50-message one does.
The owner's page uses message ids as cursors; shared and team pages name messages
by their ordinal (`chat.live.protocol.share_frames`), so theirs is an ordinal, turned
into its
message id with one index walk that loads no rows (`id_at`), and their newest
page counts the messages before it (one COUNT on the same index) to number them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from django.conf import settings
from django.db.models import QuerySet

from chat.models.messages import Message

T = TypeVar("T")


def page_size() -> int:
    return int(settings.CONVERSATION_PAGE_SIZE)


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]  # oldest first
    older: int | None  # the cursor of the page before this one; None at the start


def newest_before(
    messages: QuerySet[Message], before: int | None = None, size: int | None = None
) -> Page[Message]:
    """The newest `size` (a page's, by default) messages of `messages` with an
    id below `before` (all, if None); the cursor of the page before is the
    oldest one's id."""
    size = size or page_size()
    rows = messages.order_by("-pk")
    if before is not None:
        rows = rows.filter(pk__lt=before)
    newest = list(rows[: size + 1])
    items = newest[:size][::-1]
    more = len(newest) > size
    return Page(items, items[0].pk if more else None)


def id_at(messages: QuerySet[Message], ordinal: int) -> int | None:
    """The id of the `ordinal`-th of `messages` (from 1), or None."""
    if ordinal < 1:
        return None
    ids = messages.order_by("pk").values_list("pk", flat=True)
    return ids[ordinal - 1 : ordinal].first()


@dataclass(frozen=True)
class Numbered:
    ordinal: int
    message: Message


def numbered_page(
    messages: QuerySet[Message], before: int | None = None
) -> Page[Numbered] | None:
    """The newest page of `messages` below the ordinal `before` (the newest page
    if None), each message with its ordinal; None if there is no such ordinal."""
    if before is None:
        page = newest_before(messages)
        first = 1
        if page.items:
            first += messages.filter(pk__lt=page.items[0].pk).count()
    else:
        boundary = id_at(messages, before)
        if boundary is None:
            return None
        page = newest_before(messages, boundary)
        first = before - len(page.items)
    items = [Numbered(first + n, m) for n, m in enumerate(page.items)]
    return Page(items, first if page.older is not None else None)
