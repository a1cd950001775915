"""A MkDocs hook: `\\|` inside a table's code span is a pipe.

GitHub's tables need a pipe in a code span escaped (`"done\\|stopped"`), and
show it without the backslash; Python-Markdown keeps the backslash. The pages
are read on GitHub too, so they keep the escape, and the site drops it here,
in table cells only.
"""

from __future__ import annotations

import re
from typing import Any

CELL = re.compile(r"<td>.*?</td>", re.DOTALL)


def on_page_content(html: str, **kwargs: Any) -> str:
    return CELL.sub(lambda cell: cell.group(0).replace("\\|", "|"), html)
