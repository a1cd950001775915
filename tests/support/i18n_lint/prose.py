"""Whether a literal reads as prose (a sentence, not a name or a selector):
the JavaScript and template readers ask it."""

from __future__ import annotations

import re

from tests.support.i18n_lint.common import MARK

# Keyboard keys (event.key) are capitalised words but not text.
KEY_NAMES = frozenset(
    {
        "Enter",
        "Escape",
        "Tab",
        "Home",
        "End",
        "PageUp",
        "PageDown",
        "ArrowUp",
        "ArrowDown",
        "ArrowLeft",
        "ArrowRight",
        "Backspace",
        "Delete",
    }
)
WORD = r"[^\W\d_]"
PROSE = [
    re.compile(rf"{WORD}{{2,}},?\s+{WORD}{{2,}}"),  # two words
    re.compile(r"(?<![\w-])[A-Z][a-z]+\b(?![-_])"),  # a capitalised word
    re.compile(rf"{MARK}\s+{WORD}|{WORD}\s+{MARK}"),  # a word beside a value
    re.compile(rf"{WORD}[.!?…]\s*$"),  # closing punctuation
]
# A CSS selector (or list of them): classes, ids, attributes, combinators.
SELECTOR = re.compile(r"^[\w\s.#\[\]=\"'>+~:,*()-]*[.#\[>][\w\s.#\[\]=\"'>+~:,*()-]*$")


def reads_as_prose(text: str) -> bool:
    if text in KEY_NAMES or SELECTOR.match(text.rstrip(".")) and not text.endswith("."):
        return False
    if re.fullmatch(r"[\w-]+(\s+[\w-]*\d[\w-]*)*", text) and not re.search(
        r"[A-Z][a-z]", text
    ):
        return False  # an identifier, or CSS values such as "0px 0px 64px 0px"
    return any(pattern.search(text) for pattern in PROSE)
