"""What the sidebar shows (templates/chat/_sidebar.html and its partials):
rows with their date-group headings, Pinned, the folders, and which entry is
the page's own conversation. Rendered by the pages (chat.web.conversations.views)
and the sidebar's own views (chat.web.sidebar.views)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.urls import Resolver404, resolve, reverse
from django.utils import timezone
from django_htmx.middleware import HtmxDetails

from chat.models import Conversation, Folder
from chat.models import sidebar as lists
from chat.models.sidebar import Cursor, SidebarPage


def current_page_pk(request: HttpRequest) -> int | None:
    """The conversation whose page an htmx request comes from, if any."""
    htmx: HtmxDetails | None = getattr(request, "htmx", None)
    path = htmx.current_url_abs_path if htmx else None
    if not path:
        return None
    try:
        match = resolve(path.split("?", 1)[0])
    except Resolver404:
        return None
    pk = match.kwargs.get("pk")
    if match.url_name == "conversation" and isinstance(pk, int):
        return pk
    return None


@dataclass(frozen=True)
class Row:
    item: Conversation
    group: str  # its date group ("" outside the date-grouped list)
    heading: str  # the group's heading, on the group's first row on the page
    is_current: bool


def page_rows(
    page: SidebarPage,
    current: int | None,
    after: Cursor | None = None,
    *,
    grouped: bool = True,
) -> list[Row]:
    """The page's rows, each group's heading on its first row: not on the
    first row when the group began on the page before (`after` is in it)."""
    now = timezone.now()
    previous = lists.date_group(after.moment, now) if after and grouped else ""
    found = []
    for item in page.items:
        group = lists.date_group(item.updated_at, now) if grouped else ""
        heading = group if group != previous else ""
        found.append(Row(item, group, heading, item.pk == current))
        previous = group
    return found


def more_url(name: str, page: SidebarPage, *args: object) -> str:
    if page.next is None:
        return ""
    return f"{reverse(name, args=args)}?after={page.next}"


def folder_sections(owner: Any, current: int | None) -> list[dict[str, object]]:
    """Each of the owner's folders with its first page of conversations."""
    found_sections = []
    for folder in Folder.objects.filter(owner=owner):
        found = lists.page(lists.in_folder(owner, folder))
        found_sections.append(
            {
                "folder": folder,
                "rows": page_rows(found, current, grouped=False),
                "more_url": more_url("folder_page", found, folder.pk),
            }
        )
    return found_sections


def sections(owner: Any, current: int | None) -> dict[str, object]:
    """Pinned and the folders: what a filing change renders again."""
    pinned = lists.pinned(owner)
    return {
        "pinned": [Row(c, "", "", c.pk == current) for c in pinned],
        "folders": folder_sections(owner, current),
    }


def sidebar_context(
    request: HttpRequest, current: Conversation | None = None
) -> dict[str, object]:
    """What templates/chat/_sidebar.html needs: the sections and the first page
    of the date groups; the open conversation at the top while it is empty."""
    owner = request.user
    current_pk = current.pk if current is not None else None
    found = lists.sidebar_page(owner)
    empty_current = (
        current is not None
        and current.listed
        and current.archived_at is None
        and not current.messages.exists()
    )
    return {
        **sections(owner, current_pk),
        "rows": page_rows(found, current_pk),
        "more_url": more_url("sidebar_page", found),
        "current_new": current if empty_current else None,
    }
