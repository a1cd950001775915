"""Model output to safe HTML: markdown rendered, then sanitized.

Model text is untrusted: raw HTML in it is escaped by the parser, and the result
goes through a real sanitizer (nh3/ammonia) so links cannot carry `javascript:`.
"""

from __future__ import annotations

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from chat.markdown_math import math_plugin

_markdown = (
    MarkdownIt("commonmark", {"html": False, "linkify": False})
    .enable(["table", "strikethrough"])
    .use(math_plugin)
)

_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "th": {"align", "style"},
    "td": {"align", "style"},
    "ol": {"start"},
    "span": {"class"},
    "div": {"class"},
}


def render_markdown(text: str) -> SafeString:
    html = _markdown.render(text)
    clean = nh3.clean(
        html,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(clean)  # noqa: S308 (sanitized just above)
