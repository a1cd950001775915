"""Filters of the sidebar's templates (templates/chat/_conversation_item.html)."""

from __future__ import annotations

from datetime import datetime

from django import template

from chat.models import sidebar

register = template.Library()


@register.filter
def sort_key(moment: datetime) -> int:
    """An entry's place by date, for static/chat/sidebar.js to keep order."""
    return sidebar.micros(moment)


@register.filter
def date_group(moment: datetime) -> str:
    return sidebar.date_group(moment)
