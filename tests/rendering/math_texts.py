"""Texts for the math rule's tests, on the server and in the browser."""

from __future__ import annotations

# Ordinary text as far as math goes: delimiters, escapes, code, digits, spaces
# (a Unicode one too), a superscript digit, newlines, links and emphasis.
PIECES = [
    "$", "$$", "\\", "\\(", "\\)", "\\[", "\\]", "`", "1", "2", "²", "x", "ab",
    " ", "\u00a0", "\n", "\n\n", "[", "](u)", "*", "_",
]  # fmt: skip

# Paragraphs where the math rule is tried at every opener and nothing closes.
NEVER_CLOSING = [
    "$1",  # a digit after every `$`
    "$a ",  # a space before every `$`
    "$a\\\\$ ",  # every `$` after a backslash
    "\\(a",  # no `\)` at all
    "\\(a\\\\)",  # every `\)` after a backslash
    "\\[a\\\\]",
]
