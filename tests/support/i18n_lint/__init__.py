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

from tests.support.i18n_lint.js import js_literals, reads_as_prose, unmarked_in_js
from tests.support.i18n_lint.python import unmarked_in_python
from tests.support.i18n_lint.templates import unmarked_in_template

__all__ = [
    "js_literals",
    "reads_as_prose",
    "unmarked_in_js",
    "unmarked_in_python",
    "unmarked_in_template",
]
