"""What the three readers share: the mark that stands for produced text,
what counts as a word, and a finding."""

from __future__ import annotations

import re
from dataclasses import dataclass

MARK = "\ue000"  # stands for what a tag or variable produces: no letter
LETTER = re.compile(r"[^\W\d_]")
# Names, not words: shown as they are in every language.
ALLOWED_WORDS = frozenset(
    {"chatsite", "OpenID", "Markdown", "JSON", "API", "LDAP", "CSV", "UTC"}
)
SHOWN_ATTRIBUTES = frozenset(
    {"title", "aria-label", "placeholder", "alt", "hx-confirm", "hx-prompt", "label"}
)


@dataclass(frozen=True)
class Unmarked:
    where: str  # file:line
    text: str

    def __str__(self) -> str:
        return f"{self.where}: {self.text!r}"


def has_words(text: str) -> bool:
    words = re.findall(r"[^\W\d_][\w'’-]*", text)
    return any(word not in ALLOWED_WORDS for word in words)
