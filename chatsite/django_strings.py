"""Words of Django's admin that Django's own Simplified Chinese catalog lacks
(Django 5.2: the admin's newer templates). Marked here, makemessages puts them
in locale/zh_Hans/LC_MESSAGES/django.po, whose translations win over Django's
(LOCALE_PATHS comes first), so the admin shows no English on a Chinese page.
Nothing imports this module: the marks are its purpose. When Django's catalog
gains them, they may go (tests/admin/test_profiles.py shows the admin in Chinese)."""

from __future__ import annotations

from django.utils.translation import gettext_noop

DJANGO_ADMIN = (
    # admin/app_list.html: the headers of each app's table of models.
    gettext_noop("Model name"),
    gettext_noop("Add link"),
    gettext_noop("Change or view list link"),
    # Before the title of a page whose form has errors.
    gettext_noop("Error:"),
    # admin/login.html, admin/auth/user/add_form.html and the reset e-mail.
    gettext_noop("Forgotten your login credentials?"),
    gettext_noop(
        "After you’ve created a user, you’ll be able to edit more user options."
    ),
    gettext_noop("In case you’ve forgotten, you are:"),
)
