"""Finds user-visible text that does not go through Django's translation, in
the templates and in the JavaScript modules (tests/test_translations.py).

Templates: Django's own lexer splits each template into text, variables and
tags; whatever the translate tags produce (`{% translate %}`, the inside of
`{% blocktranslate %}`), variables and other tags become a letter-free mark,
and Python's HTML parser reads the rest. A text node, or a shown attribute
(title, aria-label, placeholder, alt, hx-confirm, a button's value) with a
letter left in it is text nobody translated. String literals with letters in a
tag's arguments (`{% include ... with label="Rename" %}`, `|default:"none"`)
count too.

JavaScript: every string literal (quotes and template literals, comments and
regular expressions skipped) that is not an argument of gettext, ngettext,
pgettext or npgettext is unmarked if it has letters and either sits where text
is shown (assigned to textContent, innerText, title, placeholder, ariaLabel,
alt; the value of setAttribute("aria-label" | "title" | ...); an argument of
announce, showAlert, alert, confirm, prompt) or reads as prose anywhere (two
words with a space between, or a capitalised word, or closing punctuation),
except where it is plainly code (a CSS selector, a URL, an event or attribute
name, a class list)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from django.template.base import Lexer, TokenType

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


# --------------------------------------------------------------- templates

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

MARKING_CALLS = re.compile(r"\b(gettext|ngettext|pgettext|npgettext)\s*\(\s*$")
SHOWN_PROPERTY = re.compile(
    r"\.(textContent|innerText|title|placeholder|ariaLabel|alt)\s*\+?=\s*"
    r"[^;]*$"
)
SHOWN_SET_ATTRIBUTE = re.compile(
    r"setAttribute\(\s*['\"](aria-label|title|placeholder|alt|aria-description)"
    r"['\"]\s*,[^;]*$"
)
SHOWING_CALL = re.compile(
    r"\b(announce|showAlert|alert|confirm|prompt|showError)\s*\("
    r"[^;]*$"
)
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


CODE_CONTEXT = re.compile(
    r"(\.(className|rel|id|type)\s*=|setAttribute\(\s*['\"](class|rel|role|id|type)"
    r"['\"]\s*,)\s*[^;]*$"
)


@dataclass(frozen=True)
class Literal:
    line: int
    text: str  # the literal's characters (a template literal's ${} parts removed)
    before: str  # the code before it on its statement


def js_literals(source: str) -> list[Literal]:
    """The string literals of a JavaScript module, with what precedes each on
    its line; skips comments and regular expression literals."""
    literals = []
    i = 0
    line = 1
    n = len(source)
    last_code = ""  # the last non-space character of code, to tell a regex from /
    while i < n:
        c = source[i]
        if c == "\n":
            line += 1
            i += 1
        elif source.startswith("//", i):
            end = source.find("\n", i)
            i = n if end < 0 else end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            stop = n if end < 0 else end + 2
            line += source.count("\n", i, stop)
            i = stop
        elif c == "/" and (last_code == "" or last_code in "(,=:[!&|?{};+-*%~^<>"):
            # A regular expression literal.
            j = i + 1
            in_class = False
            while j < n and source[j] != "\n":
                if source[j] == "\\":
                    j += 2
                    continue
                if source[j] == "[":
                    in_class = True
                elif source[j] == "]":
                    in_class = False
                elif source[j] == "/" and not in_class:
                    break
                j += 1
            i = j + 1
            last_code = "/"
        elif c in "\"'`":
            start_line = line
            j = i + 1
            parts = []
            depth = 0
            while j < n:
                ch = source[j]
                if ch == "\\":
                    parts.append(source[j : j + 2] if depth == 0 else "")
                    j += 2
                    continue
                if ch == "\n":
                    line += 1
                if depth == 0 and ch == c:
                    break
                if c == "`" and depth == 0 and source.startswith("${", j):
                    depth = 1
                    parts.append(MARK)
                    j += 2
                    continue
                if depth:
                    if ch == "{":
                        depth += 1
                    elif ch == "}":
                        depth -= 1
                    j += 1
                    continue
                parts.append(ch)
                j += 1
            statement_start = max(
                source.rfind(";", 0, i),
                source.rfind("{", 0, i),
                source.rfind("}", 0, i),
            )
            literals.append(
                Literal(start_line, "".join(parts), source[statement_start + 1 : i])
            )
            i = j + 1
            last_code = c
        else:
            if not c.isspace():
                last_code = c
            i += 1
    return literals


def unmarked_in_js(path: Path, root: Path) -> list[Unmarked]:
    found = []
    lines = path.read_text().splitlines()
    for literal in js_literals(path.read_text()):
        text = literal.text
        if not has_words(text):
            continue
        before = literal.before.rstrip()
        if MARKING_CALLS.search(before) or re.search(
            r"\b(n|np)?gettext\s*\(\s*(\"[^\"]*\"|'[^']*')\s*,\s*$", before
        ):
            continue
        source_line = lines[literal.line - 1]
        if CODE_CONTEXT.search(before) or text.lstrip().startswith("<"):
            continue  # a class, a link's rel, a tag's markup
        if "i18n: not text" in source_line or re.search(
            r"\bconsole\.\w+\([^;]*$", before
        ):
            continue  # a developer's message, or marked as no text
        shown = (
            SHOWN_PROPERTY.search(before)
            or SHOWN_SET_ATTRIBUTE.search(before)
            or SHOWING_CALL.search(before)
        )
        prose = reads_as_prose(text)
        if shown or prose:
            found.append(Unmarked(f"{path.relative_to(root)}:{literal.line}", text))
    return found
