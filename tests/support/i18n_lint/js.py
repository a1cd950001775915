"""JavaScript modules: string literals shown or reading as prose, unmarked."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.i18n_lint.common import MARK, Unmarked, has_words
from tests.support.i18n_lint.prose import reads_as_prose

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


# ------------------------------------------------------------------ Python

# What marks a string for translation (django.utils.translation's names, as
# imported or aliased as `_`), and format_lazy, whose format string is marked.
