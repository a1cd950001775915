from __future__ import annotations

from django import template
from django.utils.formats import number_format
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from chat.rendering.markdown import render_markdown

register = template.Library()


@register.filter
def markdown(text: str) -> SafeString:
    return render_markdown(text or "")


@register.filter
def codepoints(text: str) -> int:
    """Length in Unicode code points: the unit of resume offsets."""
    return len(text or "")


@register.filter
def seconds(milliseconds: float | None) -> str:
    if milliseconds is None:
        return ""
    value = milliseconds / 1000
    # Rounded first: number_format cuts the digits it leaves out.
    shown = (
        number_format(round(value, 1), 1)
        if value < 10
        else number_format(round(value), 0)
    )
    return _("%(seconds)s s") % {"seconds": shown}
