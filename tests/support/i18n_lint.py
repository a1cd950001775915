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
name, a class list).

Python (chat/ and chatsite/, but what shows no text in the pages:
tests/test_translations.py says which packages): Python's own parser reads
each module. A string literal with letters (an f-string's literal parts too,
either side of a conditional, `+` or `%`) that no gettext, gettext_lazy,
gettext_noop, ngettext, pgettext or format_lazy call wraps is unmarked where
Django or our code shows it: the keyword arguments verbose_name,
verbose_name_plural, help_text, label, empty_label, empty_value_display,
description (admin.display, admin.action), detail and message, the values of
error_messages and of a widget's shown attrs, the labels of choices=[...];
the first argument of ValidationError and of our refusals (Refused,
AttachmentRefused, DocumentsTooLarge, ImportRefused, SignInFailed), of an
error page's HttpResponse and of an import's Summary.warn; the text of
messages.success/info/warning/error/debug(request, text),
ModelAdmin.message_user(request, text), FrameError(code, detail) and
frames.error(id, code, detail); verbose_name(_plural), short_description,
empty_value_display and the admin site's titles assigned, and an
error_messages[...] assigned; a list filter's title and its lookups' labels;
each member of a TextChoices or IntegerChoices without a marked label (Django
would make an English one of its name); a model field without its
verbose_name and a form field without its label (Django would show the
attribute's name: "Quota period"), and a model without its Meta's verbose
names. A line that holds a name, not text, says `i18n: not text`."""

from __future__ import annotations

import ast
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


# ------------------------------------------------------------------ Python

# What marks a string for translation (django.utils.translation's names, as
# imported or aliased as `_`), and format_lazy, whose format string is marked.
PY_MARKING = frozenset(
    {
        "_",
        "gettext",
        "gettext_lazy",
        "gettext_noop",
        "ngettext",
        "ngettext_lazy",
        "pgettext",
        "pgettext_lazy",
        "npgettext",
        "npgettext_lazy",
        "format_lazy",
    }
)
# Keyword arguments whose value is shown: a model field's or form field's
# words, an admin column's or action's name, a frame's `detail`.
PY_SHOWN_KEYWORDS = frozenset(
    {
        "verbose_name",
        "verbose_name_plural",
        "help_text",
        "label",
        "empty_label",
        "empty_value_display",
        "description",
        "detail",
        "message",
    }
)
# Calls whose first argument is shown to the person: form and model errors,
# refusals of an upload, an attachment, an import or a sign-in, an error
# page's body, an import's warnings (`add_error`: its last).
PY_SHOWING_CALLS = frozenset(
    {
        "ValidationError",
        "Refused",
        "AttachmentRefused",
        "DocumentsTooLarge",
        "ImportRefused",
        "SignInFailed",
        "add_error",
        "HttpResponseForbidden",
        "HttpResponseBadRequest",
        "HttpResponseNotFound",
        "warn",  # an import's warnings (chat/transfer/incoming.py `Summary.warn`)
    }
)
# Calls whose argument at this position is shown: `messages.error(request,
# text)`, a socket's `frames.error(id, code, detail)` and `FrameError(code,
# detail)`.
PY_SHOWN_POSITIONS = {
    "success": 1,
    "info": 1,
    "warning": 1,
    "error": 1,
    "debug": 1,
    "FrameError": 1,
    "message_user": 1,
}
# Names assigned in a class body (a model's Meta, an admin) or on a function
# (`view.short_description = ...`), and the admin site's titles.
PY_SHOWN_NAMES = frozenset(
    {
        "verbose_name",
        "verbose_name_plural",
        "short_description",
        "empty_value_display",
        "site_header",
        "site_title",
        "index_title",
    }
)
# A form widget's shown attributes.
PY_SHOWN_ATTRS = frozenset({"placeholder", "title", "aria-label", "alt"})
CHOICES_BASES = frozenset({"TextChoices", "IntegerChoices", "Choices"})


def _call_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _unmarked_strings(node: ast.expr | None) -> list[tuple[int, str]]:
    """The literals with words in an expression that is shown, outside a
    marking call: a string, an f-string, either side of a conditional, of `+`
    or `%`, a `.format` on a string."""
    if node is None:
        return []
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str) and has_words(node.value):
            return [(node.lineno, node.value)]
        return []
    if isinstance(node, ast.JoinedStr):
        text = "".join(
            str(part.value) if isinstance(part, ast.Constant) else MARK
            for part in node.values
        )
        return [(node.lineno, text)] if has_words(text) else []
    if isinstance(node, ast.Call):
        name = _call_name(node.func)
        if name in PY_MARKING:
            return []
        if name in {"format", "join"} and isinstance(node.func, ast.Attribute):
            return _unmarked_strings(node.func.value)
        if name == "str" and node.args:
            return _unmarked_strings(node.args[0])
        return []
    if isinstance(node, ast.IfExp):
        return _unmarked_strings(node.body) + _unmarked_strings(node.orelse)
    if isinstance(node, ast.BoolOp):
        return [found for value in node.values for found in _unmarked_strings(value)]
    if isinstance(node, ast.BinOp):
        return _unmarked_strings(node.left) + _unmarked_strings(node.right)
    return []


def _choice_labels(node: ast.expr) -> list[tuple[int, str]]:
    """The labels of a `choices=[(value, label), ...]` literal."""
    found: list[tuple[int, str]] = []
    if isinstance(node, (ast.List, ast.Tuple)):
        for item in node.elts:
            if isinstance(item, (ast.Tuple, ast.List)) and len(item.elts) == 2:
                label = item.elts[1]
                if isinstance(label, (ast.List, ast.Tuple)):
                    found += _choice_labels(label)  # a named group
                else:
                    found += _unmarked_strings(label)
    return found


def _keyword_findings(keyword: ast.keyword) -> list[tuple[int, str]]:
    if keyword.arg in PY_SHOWN_KEYWORDS:
        return _unmarked_strings(keyword.value)
    if keyword.arg in {"error_messages", "attrs"} and isinstance(
        keyword.value, ast.Dict
    ):
        return [
            found
            for key, value in zip(keyword.value.keys, keyword.value.values, strict=True)
            if keyword.arg == "error_messages"
            or (isinstance(key, ast.Constant) and key.value in PY_SHOWN_ATTRS)
            for found in _unmarked_strings(value)
        ]
    if keyword.arg == "choices":
        return _choice_labels(keyword.value)
    return []


def _call_findings(node: ast.Call) -> list[tuple[int, str]]:
    found = [f for keyword in node.keywords for f in _keyword_findings(keyword)]
    name = _call_name(node.func)
    if isinstance(node.func, ast.Attribute) and _call_name(node.func.value) in {
        "cls",  # a model's own refusals (ApiKey.Refused: the API's, English)
        "warnings",  # Python's warnings, for developers
        "logger",
        "logging",
    }:
        name = ""
    if name in PY_SHOWING_CALLS and node.args:
        shown = node.args[-1] if name == "add_error" else node.args[0]
        found += _unmarked_strings(shown)
    position = PY_SHOWN_POSITIONS.get(name)
    if name == "error" and _call_name(getattr(node.func, "value", node.func)) == (
        "frames"
    ):
        position = 2  # frames.error(message_id, code, detail)
    elif (
        name in {"success", "info", "warning", "error", "debug"}
        and _call_name(getattr(node.func, "value", node.func)) != "messages"
    ):
        position = None  # only django.contrib.messages's
    if position is not None and len(node.args) > position:
        found += _unmarked_strings(node.args[position])
    return found


def _choices_findings(node: ast.ClassDef) -> list[tuple[int, str]]:
    """A TextChoices' or IntegerChoices' members: each needs a marked label
    (without one, Django makes an English label of the member's name)."""
    found: list[tuple[int, str]] = []
    for statement in node.body:
        if not isinstance(statement, ast.Assign) or not all(
            isinstance(target, ast.Name) and target.id.isupper()
            for target in statement.targets
        ):
            continue
        value = statement.value
        if isinstance(value, ast.Tuple) and len(value.elts) >= 2:
            found += _unmarked_strings(value.elts[-1])
        else:
            name = statement.targets[0]
            assert isinstance(name, ast.Name)
            found.append((statement.lineno, f"{name.id}: no label"))
    return found


def _field_call(value: ast.expr | None, module: str) -> ast.Call | None:
    """`value` if it makes a field of `module` (`models.CharField(...)`,
    `forms.ChoiceField(...)`)."""
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and isinstance(value.func.value, ast.Name)
        and value.func.value.id == module
        and re.search(r"(Field|ForeignKey)$", value.func.attr)
    ):
        return value
    return None


RELATIONS = frozenset({"ForeignKey", "OneToOneField", "ManyToManyField"})


def _fields_findings(node: ast.ClassDef) -> list[tuple[int, str]]:
    """A model's fields and a form's fields without their words: Django then
    shows an English name made of the attribute's (the admin's "Quota
    period"); a model without its Meta's verbose names is named by its class."""
    found: list[tuple[int, str]] = []
    model_fields = 0
    meta_names: set[str] = set()
    abstract = False
    for statement in node.body:
        if isinstance(statement, ast.ClassDef) and statement.name == "Meta":
            for item in statement.body:
                if isinstance(item, ast.Assign):
                    names = {_call_name(target) for target in item.targets}
                    meta_names |= names
                    abstract |= "abstract" in names
            continue
        if not isinstance(statement, (ast.Assign, ast.AnnAssign)):
            continue
        target = (
            statement.targets[0]
            if isinstance(statement, ast.Assign)
            else statement.target
        )
        name = _call_name(target)
        model_field = _field_call(statement.value, "models")
        form_field = _field_call(statement.value, "forms")
        if model_field is not None:
            model_fields += 1
            words = {keyword.arg for keyword in model_field.keywords}
            attr = _call_name(model_field.func)
            if attr not in RELATIONS and model_field.args:
                found += _unmarked_strings(model_field.args[0])  # verbose_name
            elif "verbose_name" not in words:
                found.append((statement.lineno, f"{name}: no verbose_name"))
        elif form_field is not None:
            words = {keyword.arg for keyword in form_field.keywords}
            hidden = any(
                keyword.arg == "widget" and "Hidden" in ast.unparse(keyword.value)
                for keyword in form_field.keywords
            )
            if "label" not in words and not hidden:
                found.append((statement.lineno, f"{name}: no label"))
    if model_fields and not abstract:
        for meta_name in ("verbose_name", "verbose_name_plural"):
            if meta_name not in meta_names:
                found.append((node.lineno, f"{node.name}: no Meta.{meta_name}"))
    return found


def _list_filter_findings(node: ast.ClassDef) -> list[tuple[int, str]]:
    """An admin list filter's title and the labels its `lookups` returns."""
    if not any(_call_name(base).endswith("ListFilter") for base in node.bases):
        return []
    found: list[tuple[int, str]] = []
    for statement in node.body:
        if isinstance(statement, ast.Assign) and any(
            _call_name(target) == "title" for target in statement.targets
        ):
            found += _unmarked_strings(statement.value)
        if isinstance(statement, ast.FunctionDef) and statement.name == "lookups":
            for inner in ast.walk(statement):
                if isinstance(inner, ast.Return) and inner.value is not None:
                    found += _choice_labels(inner.value)
    return found


def unmarked_in_python(path: Path, root: Path) -> list[Unmarked]:
    source = path.read_text()
    lines = source.splitlines()
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            found += _call_findings(node)
        elif (
            isinstance(node, ast.ClassDef)
            and {_call_name(base) for base in node.bases} & CHOICES_BASES
        ):
            found += _choices_findings(node)
        elif isinstance(node, ast.ClassDef):
            found += _fields_findings(node) + _list_filter_findings(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_call_name(target) in PY_SHOWN_NAMES for target in targets) or any(
                isinstance(target, ast.Subscript)
                and _call_name(target.value) == "error_messages"
                for target in targets
            ):
                found += _unmarked_strings(node.value)
    name = path.relative_to(root)
    return [
        Unmarked(f"{name}:{line}", text)
        for line, text in sorted(set(found))
        if "i18n: not text" not in lines[line - 1]
    ]
