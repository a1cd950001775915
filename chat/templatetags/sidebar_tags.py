"""Filters of the sidebar's templates (templates/chat/_conversation_item.html)."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache

from django import template
from django.urls import get_script_prefix, reverse

from chat.models import sidebar

register = template.Library()


@register.filter
def sort_key(moment: datetime) -> int:
    """An entry's place by date, for static/chat/sidebar.js to keep order."""
    return sidebar.micros(moment)


@register.filter
def date_group(moment: datetime) -> str:
    return sidebar.date_group(moment)


# Never a real id: where it lands in a reversed URL is where an id goes.
_PLACEHOLDER = 987_654_321_012_345


@lru_cache(maxsize=64)
def _around_id(name: str, prefix: str) -> tuple[str, str]:
    before, _, after = reverse(name, args=[_PLACEHOLDER]).partition(str(_PLACEHOLDER))
    return before, after


@register.simple_tag
def conversation_url(name: str, pk: int) -> str:
    """`reverse(name, args=[pk])`, each name reversed once per script prefix:
    an entry of the list has seven such URLs, and reversing them was a fifth
    of a page's time (bench/data.py)."""
    before, after = _around_id(name, get_script_prefix())
    return f"{before}{int(pk)}{after}"
