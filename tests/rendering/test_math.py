"""The inline math scan (chat/rendering/math.py): the same spans as the scan it
replaced, found with work linear in the text."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it.rules_inline import StateInline

from chat.rendering import markdown
from chat.rendering.math import DELIMITERS, InlineMath, match_inline_math
from tests.rendering.math_texts import NEVER_CLOSING, PIECES


def reference_match(src: str, start: int) -> InlineMath | None:
    """The scan as it was: from every opener, forward through every closing
    delimiter until one may close. Quadratic, and the definition of the rules."""
    opener = next(
        (o for o in ("$$", "$", "\\(", "\\[") if src.startswith(o, start)), None
    )
    if opener is None:
        return None
    close = DELIMITERS[opener]
    begin = start + len(opener)
    if opener == "$" and (begin >= len(src) or src[begin].isspace()):
        return None
    end = src.find(close, begin)
    while end != -1:
        escaped = src[end - 1] == "\\"
        spaced = opener == "$" and src[end - 1].isspace()
        digit = opener == "$" and src[end + 1 : end + 2].isdigit()
        if end > begin and not escaped and not spaced and not digit:
            return InlineMath(opener, src[begin:end], end + len(close))
        end = src.find(close, end + 1)
    return None


def reference_render(text: str) -> str:
    """The server's markdown (chat/markdown.py) with the old scan."""
    with mock.patch("chat.rendering.math.match_inline_math", reference_match):
        return markdown._markdown.render(text)


texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=400, deadline=None, database=None)
@given(texts)
def test_the_scan_finds_what_the_old_scan_found_from_every_position(text):
    for start in range(len(text) + 1):
        assert match_inline_math(text, start) == reference_match(text, start)


@settings(max_examples=200, deadline=None, database=None)
@given(texts)
def test_answers_render_as_they_did(text):
    assert markdown._markdown.render(text) == reference_render(text)


class CountingText(str):
    """Text that counts the characters looked at through its methods."""

    looked: int = 0

    def find(self, sub, start=None, end=None):
        found = super().find(sub, start, end)
        start = 0 if start is None else start
        self.looked += (found + len(sub) if found != -1 else len(self)) - start
        return found

    def startswith(self, prefix, start=0, end=None):
        self.looked += len(prefix)
        return super().startswith(prefix, start, end)

    def __getitem__(self, key):
        part = super().__getitem__(key)
        self.looked += max(len(part), 1)
        return part


@pytest.mark.parametrize("piece", NEVER_CLOSING)
def test_a_paragraph_of_openers_that_never_close_is_scanned_once(piece):
    """The inline parser tries the math rule at every `$` and `\\`: scanning
    forward from each for a closer made `"$1" × 7,500` take 15 s on the event
    loop. Now each character is looked at a bounded number of times."""
    text = CountingText(piece * 1500)
    state = StateInline(text, markdown._markdown, {}, [])
    markdown._markdown.inline.tokenize(state)
    assert state.tokens  # parsed
    assert text.looked < 40 * len(text)
