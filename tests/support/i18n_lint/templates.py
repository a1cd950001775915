"""Templates: text nodes and shown attributes nobody translated."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from django.template.base import Lexer, TokenType

from tests.support.i18n_lint.common import (
    MARK,
    SHOWN_ATTRIBUTES,
    Unmarked,
    has_words,
)
from tests.support.i18n_lint.prose import reads_as_prose

TRANSLATING_START = re.compile(r"^(blocktranslate|blocktrans)\b")
TRANSLATING_END = re.compile(r"^(endblocktranslate|endblocktrans)\b")
QUOTED = re.compile(r"""(?<![\w.])(?:_\()?("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")
# Tags whose quoted arguments are never shown: names of templates, URLs,
# static files, loaded libraries, the comparisons of `if`.
CODE_TAGS = re.compile(
    r"^(extends|load|url|static|block|endblock|csrf_token|if|elif|for|cycle|"
    r"firstof|now|widthratio|translate|trans|get_current_language|"
    r"blocktranslate|blocktrans|plural)\b"
)


def template_tokens(source: str) -> list[tuple[TokenType, str, int]]:
    return [
        (token.token_type, token.contents, token.lineno)
        for token in Lexer(source).tokenize()
    ]


def _quoted_words(contents: str) -> list[str]:
    """Quoted strings shown as text among a tag's or variable's arguments: any
    with words given to `default` or `yesno`, and anything that reads as prose
    (`{% include ... with label="Rename it" %}`); not a date's format, a
    template's name, an identifier."""
    found = []
    for match in QUOTED.finditer(contents):
        literal = match.group(1)[1:-1]
        if match.group(0).startswith("_("):
            continue  # _("...") is translated
        ahead = contents[: match.start()].rstrip()
        if re.search(r"\|\s*(date|time)\s*:$", ahead):
            continue  # a format: the locale's names of months and days
        shown_filter = re.search(r"\|\s*(default|yesno)\s*:$", ahead)
        if has_words(literal) and (shown_filter or reads_as_prose(literal)):
            found.append(literal)
    return found


class _Reader(HTMLParser):
    def __init__(self, lines: list[int]) -> None:
        super().__init__(convert_charrefs=True)
        self.lines = lines  # the template's line of each character
        self.found: list[tuple[int, str]] = []
        self.skipping = 0  # inside <script>, <style>, <svg>

    def _line(self) -> int:
        line, column = self.getpos()
        offset = sum(self._line_lengths[: line - 1]) + column
        return self.lines[min(offset, len(self.lines) - 1)]

    def feed_text(self, text: str) -> None:
        self._line_lengths = [len(line) for line in text.splitlines(keepends=True)]
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in {"script", "style", "svg"}:
            self.skipping += 1
        shown = dict(attrs)
        for name, value in attrs:
            if value is None:
                continue
            is_button_value = (
                name == "value"
                and tag == "input"
                and shown.get("type") in {"submit", "button", "reset"}
            )
            if (name in SHOWN_ATTRIBUTES or is_button_value) and has_words(value):
                self.found.append((self._line(), f"{tag}[{name}]: {value}"))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in {"script", "style", "svg"}:
            self.skipping -= 1

    def handle_endtag(self, tag: str) -> None:
        if tag in {"script", "style", "svg"} and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping and has_words(data):
            self.found.append((self._line(), " ".join(data.replace(MARK, " ").split())))


def unmarked_in_template(path: Path, root: Path) -> list[Unmarked]:
    source = path.read_text()
    name = path.relative_to(root)
    found: list[Unmarked] = []
    text: list[str] = []
    lines: list[int] = []  # the template's line of each character of `text`
    translating = 0
    commenting = 0
    for kind, contents, lineno in template_tokens(source):
        if kind == TokenType.BLOCK:
            if re.match(r"^comment\b", contents):
                commenting += 1
            elif contents == "endcomment":
                commenting -= 1
            elif TRANSLATING_START.match(contents):
                translating += 1
            elif TRANSLATING_END.match(contents):
                translating -= 1
            elif not commenting and not CODE_TAGS.match(contents):
                found += [
                    Unmarked(f"{name}:{lineno}", f"{{% {contents} %}}: {literal}")
                    for literal in _quoted_words(contents)
                ]
            piece = MARK
        elif kind == TokenType.VAR:
            if not commenting and not translating:
                found += [
                    Unmarked(f"{name}:{lineno}", f"{{{{ {contents} }}}}: {literal}")
                    for literal in _quoted_words(contents)
                ]
                if re.search(r"\|\s*pluralize\b", contents):
                    found.append(
                        Unmarked(
                            f"{name}:{lineno}",
                            f"{{{{ {contents} }}}}: English plural (use "
                            "blocktranslate count)",
                        )
                    )
            piece = MARK
        elif kind == TokenType.COMMENT:
            piece = ""
        else:
            piece = MARK if (translating or commenting) else contents
        # Each character keeps the template line it came from.
        first = lineno
        for char in piece:
            lines.append(first)
            if char == "\n":
                first += 1
        text.append(piece)
    reader = _Reader(lines or [1])
    reader.feed_text("".join(text))
    found += [Unmarked(f"{name}:{line}", shown) for line, shown in reader.found]
    source_lines = source.splitlines()
    return [
        unmarked
        for unmarked in found
        if "i18n: not text"
        not in source_lines[int(unmarked.where.rsplit(":", 1)[1]) - 1]
    ]


# --------------------------------------------------------------- JavaScript
