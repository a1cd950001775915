"""A fetched page's readable text, in a worker process (`chat.work`: run by
`chat.tools.web.source`, preloaded by `chat.work.preload`): what an HTML
parser builds from a few megabytes of hostile markup is not bounded by their
size, so it is paid for there, under a time and memory budget.

The text is the page's main content as trafilatura finds it (menus, scripts,
styles and boilerplate left out), or all of its text when it finds none.
What the page says stays text: an entity such as `&lt;script&gt;` comes back
as the characters `<script>`, data for the model and the user's screen to
show, never markup to run."""

from __future__ import annotations

import codecs
from dataclasses import dataclass


@dataclass(frozen=True)
class Readable:
    title: str
    text: str


def readable(body: bytes, media_type: str, charset: str | None, url: str) -> Readable:
    """The title and text of a page of `media_type` (text/html or
    text/plain), its bytes in `charset` (None: found from the page)."""
    if media_type == "text/plain":
        return Readable("", _decoded(body, charset or "utf-8"))
    import trafilatura

    page: bytes | str = _decoded(body, charset) if charset else body
    found = trafilatura.bare_extraction(
        page,
        url=url,
        with_metadata=True,
        include_comments=False,
        include_tables=True,
        favor_recall=True,
    )
    title = str(getattr(found, "title", None) or "")
    text = str(getattr(found, "text", None) or "")
    if not text.strip():
        text = trafilatura.html2txt(page)
    return Readable(" ".join(title.split()), text.strip())


def _decoded(body: bytes, charset: str) -> str:
    try:
        codecs.lookup(charset)
    except LookupError:
        charset = "utf-8"
    return body.decode(charset, errors="replace")
