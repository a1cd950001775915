"""Python modules: strings Django or our code shows, unmarked."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.i18n_lint.common import MARK, Unmarked, has_words

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
