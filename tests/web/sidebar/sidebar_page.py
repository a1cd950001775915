"""What the sidebar's tests share: a conversation made (and aged) for it, and
the sidebar's HTML read: its entries, its group headings, the next page's URL."""

from __future__ import annotations

import re
from datetime import timedelta

from django.utils import timezone

from chat.models import Conversation

HTMX = {"HTTP_HX_REQUEST": "true"}


def talk(owner, title: str, **fields) -> Conversation:
    conversation = Conversation.objects.create(owner=owner, title=title, **fields)
    conversation.messages.create(role="user", content=title)
    return conversation


def aged(conversation: Conversation, days: float) -> Conversation:
    Conversation.objects.filter(pk=conversation.pk).update(
        updated_at=timezone.now() - timedelta(days=days)
    )
    conversation.refresh_from_db()
    return conversation


def entries(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'id="conversation-item-(\d+)"', html)]


def headings(html: str) -> list[str]:
    return re.findall(r'<h2 class="group-title"[^>]*>([^<]+)</h2>', html)


def more_url(html: str) -> str | None:
    found = re.search(r'class="sidebar-more" hx-get="([^"]+)"', html)
    return found[1].replace("&amp;", "&") if found else None
