"""The interface is whole in every language: each string the code marks has a
finished Simplified Chinese translation, and no text is left unmarked in the
templates, the JavaScript modules and the Python code (tests/support/i18n_lint/)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

from tests.support.i18n_lint import (
    js_literals,
    reads_as_prose,
    unmarked_in_js,
    unmarked_in_python,
    unmarked_in_template,
)

ROOT = Path(settings.BASE_DIR)
LOCALE = ROOT / "locale"
DOMAINS = ("django", "djangojs")
# What makemessages reads: our code, templates and modules, not the tests,
# benches, virtualenvs or vendored libraries.
IGNORED = [
    "tests/*",
    "bench/*",
    "static/vendor/*",
    "staticfiles/*",
    "node_modules/*",
    "test-artifacts/*",
    "deploy/*",
    "docs/*",
]


def _catalog(lang: str, domain: str) -> Catalog:
    with (LOCALE / lang / "LC_MESSAGES" / f"{domain}.po").open("rb") as po:
        return read_po(po, locale=lang)


def _ids(catalog: Catalog) -> set[tuple[str | None, str]]:
    return {
        (message.context, message.id if isinstance(message.id, str) else message.id[0])
        for message in catalog
        if message.id
    }


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_chinese_catalog_has_no_untranslated_or_fuzzy_entry(domain: str) -> None:
    catalog = _catalog("zh_Hans", domain)
    assert len(catalog) > 10
    untranslated = [
        message.id
        for message in catalog
        if message.id
        and not all(
            message.string if isinstance(message.string, tuple) else [message.string]
        )
    ]
    fuzzy = [message.id for message in catalog if message.id and message.fuzzy]
    assert untranslated == []
    assert fuzzy == []
    # The same placeholders on both sides (%(name)s, %s): Babel's checkers.
    problems = [(message.id, errors) for message, errors in catalog.check()]
    assert problems == []


@pytest.mark.skipif(
    shutil.which("xgettext") is None and os.environ.get("CI") != "true",
    reason="xgettext missing (scripts/ensure-gettext.sh installs it)",
)
@pytest.mark.parametrize("domain", DOMAINS)
def test_every_marked_string_is_in_the_chinese_catalog(
    domain: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # makemessages from scratch into an empty directory: what the code marks
    # today, compared with what the committed catalog translates. It runs in a
    # directory of links to the sources: in the project itself it would write
    # into the committed catalogs (it files each source under the locale/
    # directory beside it).
    sources = tmp_path / "sources"
    sources.mkdir()
    for name in ("chat", "chatsite", "templates", "static"):
        (sources / name).symlink_to(ROOT / name)
    monkeypatch.chdir(sources)
    with override_settings(LOCALE_PATHS=[tmp_path / "out"]):
        call_command(
            "makemessages",
            locale=["zh_Hans"],
            domain=domain,
            ignore_patterns=IGNORED,
            symlinks=True,
            no_obsolete=True,
            verbosity=0,
        )
    with (tmp_path / "out" / "zh_Hans" / "LC_MESSAGES" / f"{domain}.po").open(
        "rb"
    ) as po:
        marked = _ids(read_po(po, locale="zh_Hans"))
    committed = _ids(_catalog("zh_Hans", domain))
    assert sorted(marked - committed, key=str) == [], "not in the catalog"
    assert sorted(committed - marked, key=str) == [], "no longer marked in the code"


def test_the_compiled_catalogs_are_those_of_the_sources() -> None:
    # tests/conftest.py compiles them (chatsite/catalogs.py) as `make messages` does.
    for domain in DOMAINS:
        po = LOCALE / "zh_Hans" / "LC_MESSAGES" / f"{domain}.po"
        mo = po.with_suffix(".mo")
        assert mo.stat().st_mtime >= po.stat().st_mtime


def test_no_template_has_unmarked_text() -> None:
    found = [
        str(unmarked)
        for path in sorted((ROOT / "templates").rglob("*.html"))
        for unmarked in unmarked_in_template(path, ROOT)
    ]
    assert found == []


def test_no_javascript_module_has_unmarked_text() -> None:
    found = [
        str(unmarked)
        for path in sorted((ROOT / "static" / "chat").glob("*.js"))
        for unmarked in unmarked_in_js(path, ROOT)
    ]
    assert found == []


# Python that shows no text to people in the site's pages (README,
# "Languages", "Not translated"): the API's errors for programs, management
# commands, migrations (their strings are the models' of their day), the
# demo model, and the model-server seam, which has no Django (its errors are
# stored with an answer as they are; tests/test_layers.py).
PYTHON_NOT_SHOWN = (
    "chat/api",
    "chat/management",
    "chat/migrations",
    "chat/simulator",
    "chat/upstream",
)


def test_no_python_module_has_unmarked_text() -> None:
    found = [
        str(unmarked)
        for package in ("chat", "chatsite")
        for path in sorted((ROOT / package).rglob("*.py"))
        if not str(path.relative_to(ROOT)).startswith(PYTHON_NOT_SHOWN)
        for unmarked in unmarked_in_python(path, ROOT)
    ]
    assert found == []


# ------------------------------------------------------------ the lints' own


def _findings(
    tmp_path: Path, name: str, source: str, lint: Callable[[Path, Path], list[Any]]
) -> list[str]:
    path = tmp_path / name
    path.write_text(source)
    return [unmarked.text for unmarked in lint(path, tmp_path)]


def _template_findings(tmp_path: Path, source: str) -> list[str]:
    return _findings(tmp_path, "t.html", source, unmarked_in_template)


def test_the_template_lint_finds_text_outside_the_translate_tags(
    tmp_path: Path,
) -> None:
    assert _template_findings(tmp_path, "<p>Send</p>") == ["Send"]
    assert _template_findings(tmp_path, '<button title="Stop it">x</button>') == [
        "button[title]: Stop it",
        "x",
    ]
    assert _template_findings(tmp_path, '<input type="submit" value="Save">') == [
        "input[value]: Save"
    ]
    assert _template_findings(tmp_path, "{{ n }} token{{ n|pluralize }}") == [
        "{{ n|pluralize }}: English plural (use blocktranslate count)",
        "token",
    ]
    assert _template_findings(tmp_path, '{{ a|default:"none" }}') == [
        '{{ a|default:"none" }}: none'
    ]
    assert _template_findings(
        tmp_path, '{% include "x.html" with label="Rename it" %}'
    ) == ['{% include "x.html" with label="Rename it" %}: Rename it']


def test_the_template_lint_passes_translated_text_names_and_code(
    tmp_path: Path,
) -> None:
    source = (
        "{% load i18n %}<p>{% translate 'Send' %}</p>"
        "<p title=\"{% translate 'Stop' %}\">{{ name }} · chatsite</p>"
        "{% blocktranslate trimmed count n=n %}{{ n }} token{% plural %}"
        "{{ n }} tokens{% endblocktranslate %}"
        '{{ when|date:"j M Y" }}{% url "home" %}{# Send #}'
        '<svg><path d="M12 19V5"/></svg><span class="x" data-state="live"></span>'
        '{% include "x.html" with select_id="thinking-mode" %}'
    )
    assert _template_findings(tmp_path, source) == []


def _js_findings(tmp_path: Path, source: str) -> list[str]:
    return _findings(tmp_path, "m.js", source, unmarked_in_js)


def test_the_javascript_lint_finds_shown_and_prose_strings(tmp_path: Path) -> None:
    source = """
button.textContent = copied ? "Copied" : "failed";
el.setAttribute("aria-label", `Copy ${lang} code`);
announce("done");
const text = "Not connected: try again.";
const rate = `${n} tok/s`;
status = "Thoughts";
"""
    assert _js_findings(tmp_path, source) == [
        "Copied",
        "failed",
        "Copy \ue000 code",
        "done",
        "Not connected: try again.",
        "\ue000 tok/s",
        "Thoughts",
    ]


def test_the_javascript_lint_passes_marked_strings_and_code(tmp_path: Path) -> None:
    source = """
import { x } from "./page.js";
button.textContent = gettext("Copied");
el.textContent = interpolate(ngettext("%s token", "%s tokens", n), [n]);
el.setAttribute("aria-expanded", "true");
el.className = "code-block copy";
if (event.key === "Enter") document.querySelector("details.thinking > summary");
const re = /Not a string "quoted"/;
// "A comment, with words."
console.warn(`answer ${id}: the page's text differs`);
observe({ rootMargin: "0px 0px 64px 0px" });
"""
    assert _js_findings(tmp_path, source) == []


def test_prose_is_told_from_code() -> None:
    assert reads_as_prose("Loading model…")
    assert reads_as_prose("older messages shown")
    assert not reads_as_prose("htmx:afterRequest")
    assert not reads_as_prose("code, pre, .katex")
    assert not reads_as_prose("X-CSRFToken")
    assert [literal.text for literal in js_literals('a = "x\\"y"; b = `${c}d`;')] == [
        'x\\"y',
        "\ue000d",
    ]


def _python_findings(tmp_path: Path, source: str) -> list[str]:
    return _findings(tmp_path, "m.py", source, unmarked_in_python)


def test_the_python_lint_finds_unmarked_words_where_they_are_shown(
    tmp_path: Path,
) -> None:
    source = """
class Team(models.Model):
    name = models.CharField(max_length=100)
    quota_period = models.CharField("quota period", max_length=10)
    owner = models.ForeignKey("auth.User", on_delete=models.CASCADE)
    note = models.TextField(help_text="Seen by members.")

    class Status(models.TextChoices):
        OPEN = "open"
        SHUT = "shut", "Shut down"


class TeamForm(forms.Form):
    username = forms.CharField(max_length=150)
    mode = forms.ChoiceField(choices=[("a", "All of it")], label=_("Mode"))
    code = forms.CharField(widget=forms.HiddenInput)


def view(request, team, where):
    messages.success(request, "Saved.")
    self.message_user(request, f"{team} exported.")
    self.fields["title"].error_messages["required"] = "Give it a title."
    raise ValidationError("Too long" if team else "Too short")
    raise ImportRefused(f"{where} has no key.")
    frames.error(None, "bad", "That went wrong.")
    summary.warn("Images left out", 2)
    summary.error("Not a sink")
    warnings.warn("For developers only")


@admin.display(description="Members")
def members(team): ...


class StateFilter(admin.SimpleListFilter):
    title = "state"

    def lookups(self, request, model_admin):
        return [("active", "active")]
"""
    assert _python_findings(tmp_path, source) == [
        "Team: no Meta.verbose_name",
        "Team: no Meta.verbose_name_plural",
        "name: no verbose_name",
        "quota period",
        "owner: no verbose_name",
        "Seen by members.",
        "note: no verbose_name",
        "OPEN: no label",
        "Shut down",
        "username: no label",
        "All of it",
        "Saved.",
        "\ue000 exported.",
        "Give it a title.",
        "Too long",
        "Too short",
        "\ue000 has no key.",
        "That went wrong.",
        "Images left out",
        "Members",
        "state",
        "active",
    ]


def test_the_python_lint_passes_marked_strings_names_and_code(
    tmp_path: Path,
) -> None:
    source = """
class Team(models.Model):
    name = models.CharField(_("name"), max_length=100)
    owner = models.ForeignKey(
        "auth.User", on_delete=models.CASCADE, verbose_name=_("owner")
    )
    source = models.CharField(
        verbose_name=_("source"), choices=[("oidc", "OpenID Connect")]  # i18n: not text
    )

    class Meta:
        verbose_name = _("team")
        verbose_name_plural = _("teams")

    class Status(models.TextChoices):
        OPEN = "open", _("Open")
        EN = "en", "English"  # i18n: not text (named in itself)


class Base(models.Model):
    at = models.DateTimeField(verbose_name=_("at"))

    class Meta:
        abstract = True


def view(request, n):
    messages.success(request, _("Saved."))
    raise ValidationError(gettext_lazy("%(n)s too long") % {"n": n}, code="long")
    raise ImportRefused(_("%(where)s has no key.") % {"where": n})
    logger.error("The directory failed: %s", n)
    raise ValueError("a folder of someone else")
"""
    assert _python_findings(tmp_path, source) == []
