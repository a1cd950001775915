"""Math spans for the server's markdown: `$…$`, `$$…$$`, `\\(…\\)`, `\\[…\\]`.

The same rules as the browser's parser (static/chat/markdown.js), so TeX is never
read as markdown: `\\\\` stays two backslashes and `_` or `*` stay TeX. A span is
rendered as its own source, delimiters included, in a `math-source` element that
the browser typesets with KaTeX (and that reads as TeX without JavaScript).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from functools import lru_cache
from html import escape
from typing import Any, NamedTuple

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

DELIMITERS = {"$": "$", "$$": "$$", "\\(": "\\)", "\\[": "\\]"}
BLOCK_OPENERS = ("$$", "\\[")


class InlineMath(NamedTuple):
    open: str
    content: str
    end: int


def match_inline_math(src: str, start: int) -> InlineMath | None:
    """Inline math starting at `start`. `$…$` follows pandoc: no space inside
    the dollars, no digit right after the closing one, so "$5 and $10" is text.

    The span closes at the first closing delimiter after the opening one that
    may close: not escaped by a backslash and, for `$`, with no space before it
    and no digit after it."""
    opener = next(
        (o for o in ("$$", "$", "\\(", "\\[") if src.startswith(o, start)), None
    )
    if opener is None:
        return None
    begin = start + len(opener)
    if opener == "$" and (begin >= len(src) or src[begin].isspace()):
        return None
    close = DELIMITERS[opener]
    end = _closers(src).first_after(close, begin)
    if end is None:
        return None
    return InlineMath(opener, src[begin:end], end + len(close))


class _Closers:
    """Where each closing delimiter may close math in one text, found once.

    Whether a `$` (or `$$`, `\\)`, `\\]`) may close depends on its neighbours
    only, not on where the math opened: so the positions are listed once per
    text, and each opening delimiter finds its closer by bisection. Searching
    forward from every opener instead was quadratic (`"$1" × 7,500`, where no
    `$` may close, took 15 s)."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.positions: dict[str, list[int]] = {}

    def first_after(self, close: str, begin: int) -> int | None:
        positions = self.positions.get(close)
        if positions is None:
            positions = self.positions[close] = self._find(close)
        index = bisect_right(positions, begin)
        return positions[index] if index < len(positions) else None

    def _find(self, close: str) -> list[int]:
        src = self.src
        dollar = close == "$"
        found = []
        # Never at 0: math has an opener before its closer.
        end = src.find(close, 1)
        while end != -1:
            before = src[end - 1]
            if before != "\\" and not (
                dollar and (before.isspace() or src[end + 1 : end + 2].isdigit())
            ):
                found.append(end)
            end = src.find(close, end + 1)
        return found


# The inline parser tries the rule at every `$` and `\` of one paragraph's text
# in turn (and again inside link text): the same string each time.
@lru_cache(maxsize=4)
def _closers(src: str) -> _Closers:
    return _Closers(src)


def _inline_rule(state: StateInline, silent: bool) -> bool:
    found = match_inline_math(state.src, state.pos)
    if found is None or found.end > state.posMax:
        return False
    if not silent:
        token = state.push("math_inline", "math", 0)
        token.content = found.content
        token.markup = found.open
    state.pos = found.end
    return True


def _ends_with_close(text: str, close: str) -> bool:
    trimmed = text.rstrip()
    return len(trimmed) >= len(close) and trimmed.endswith(close)


def _block_rule(
    state: StateBlock, start_line: int, end_line: int, silent: bool
) -> bool:
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False
    first = _line(state, start_line)
    opener = next((o for o in BLOCK_OPENERS if first.startswith(o)), None)
    if opener is None:
        return False
    close = DELIMITERS[opener]
    lines = [first[len(opener) :]]
    if close in lines[0] and not _ends_with_close(lines[0], close):
        return False  # inline math at the start of a paragraph
    if silent:
        return True
    line = start_line
    closed = _ends_with_close(lines[0], close)
    while not closed and line + 1 < end_line:
        line += 1
        lines.append(_line(state, line))
        closed = _ends_with_close(lines[-1], close)
    if closed:
        lines[-1] = lines[-1].rstrip()[: -len(close)]
    state.line = min(line, end_line) + 1
    token = state.push("math_block", "math", 0)
    token.block = True
    token.content = "\n".join(lines).strip()
    token.markup = opener
    token.map = [start_line, state.line]
    return True


def _line(state: StateBlock, line: int) -> str:
    return state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]


def _source(token: Token) -> str:
    return escape(f"{token.markup}{token.content}{DELIMITERS[token.markup]}")


def _render_inline(
    self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:
    return f'<span class="math-source">{_source(tokens[idx])}</span>'


def _render_block(
    self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:
    source = _source(tokens[idx])
    return (
        f'<div class="math-display"><span class="math-source">{source}</span></div>\n'
    )


def math_plugin(md: MarkdownIt) -> None:
    """Parse math before markdown escapes and emphasis can touch it."""
    md.inline.ruler.before("escape", "math_inline", _inline_rule)
    md.block.ruler.before(
        "fence",
        "math_block",
        _block_rule,
        {"alt": ["paragraph", "reference", "blockquote", "list"]},
    )
    md.add_render_rule("math_inline", _render_inline)
    md.add_render_rule("math_block", _render_block)
