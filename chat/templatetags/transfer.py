"""Template filters of the export and import (`chat.transfer`)."""

from __future__ import annotations

from django import template

from chat.transfer.markdown import SOURCES

register = template.Library()


@register.filter
def import_source(imported_from: str) -> str:
    """Where an imported conversation came from, for people ("Open WebUI")."""
    return SOURCES.get(imported_from, imported_from)
