"""Model output to safe HTML: markdown rendered, then sanitized.

Model text is untrusted: raw HTML in it is escaped by the parser, and the result
goes through a real sanitizer (nh3/ammonia) so links cannot carry `javascript:`.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from chat.rendering.math import math_plugin

logger = logging.getLogger(__name__)

# Longer answers are rendered in a helper process (see `prerender`).
OFF_LOOP_CHARS = 16_000

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
    prerendered = _prerendered.pop(text, None)
    if prerendered is not None:
        return prerendered
    return mark_safe(_render_html(text))  # noqa: S308 (sanitized in there)


def _render_html(text: str) -> str:
    html = _markdown.render(text)
    return nh3.clean(
        html,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


# A finished 20,000-token answer takes 60-200 ms to render: on the event loop
# that would stall every other stream of the process for as long, and a thread
# would hold the GIL just the same. So long answers are rendered in a helper
# process first, and `render_markdown` (the template filter) then finds them.
_prerendered: OrderedDict[str, SafeString] = OrderedDict()
_PRERENDERED_MAX = 8
# The helper process, started on first use. Per process, not per event loop (an
# executor serves any loop), so this module is its one owner; `chat.rendering`
# imports nothing of `chat.live` (where the loop's state is).
_pool: ProcessPoolExecutor | None = None


async def prerender(text: str) -> None:
    """Render a long `text` in the helper process, for `render_markdown` to find.

    Short texts are left to `render_markdown` (the hop costs more than they
    do); if the helper process fails, so is the long one (inline, as before).
    """
    if len(text) < OFF_LOOP_CHARS:
        return
    global _pool
    if _pool is None:
        # Spawned, not forked: the server process has threads of its own.
        context = multiprocessing.get_context("spawn")
        _pool = ProcessPoolExecutor(max_workers=1, mp_context=context)
    try:
        loop = asyncio.get_running_loop()
        html = await loop.run_in_executor(_pool, _render_html, text)
    except (BrokenProcessPool, OSError):
        logger.warning("the markdown helper process failed", exc_info=True)
        _pool = None
        return
    _prerendered[text] = mark_safe(html)  # noqa: S308 (sanitized in there)
    while len(_prerendered) > _PRERENDERED_MAX:
        _prerendered.popitem(last=False)
