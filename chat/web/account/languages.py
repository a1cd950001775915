"""The interface's language: Django's LocaleMiddleware picks it from the
browser's Accept-Language (settings.LANGUAGES); a signed-in user's stored
choice (`UserSettings.language`, set on their account page) wins over it. The
JavaScript modules read their strings from Django's JavaScript catalog for the
same language (`catalog`, an external script under the strict CSP)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils import translation
from django.utils.translation import to_locale
from django.views.decorators.cache import cache_control
from django.views.decorators.http import last_modified
from django.views.i18n import JavaScriptCatalog

from chat.models import UserSettings
from chat.models.accounts import LANGUAGE_SESSION_KEY

# The signed-in user's choice, kept in their session so that a request costs
# no query for it: read from UserSettings once per session, set again when
# they save it (`chat.web.account.views`), and brought up to date by any full page
# (whose appearance reads their settings anyway), so a choice made on another
# device reaches this one at its next page. The sockets read it there too
# (chat.sockets.languages).
SESSION_KEY = LANGUAGE_SESSION_KEY


def stored_language(user_id: int) -> str:
    """The user's choice, "" when they follow their browser."""
    return (
        UserSettings.objects.filter(user_id=user_id)
        .values_list("language", flat=True)
        .first()
        or ""
    )


def remember(request: HttpRequest, language: str) -> None:
    if request.session.get(SESSION_KEY) != language:
        request.session[SESSION_KEY] = language


class StoredLanguageMiddleware:
    """After AuthenticationMiddleware: the signed-in user's stored language
    over the one LocaleMiddleware took from Accept-Language."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Only a signed-in session holds the key (signing out flushes it), so
        # once it is there the user need not be looked up for it.
        chosen = request.session.get(SESSION_KEY)
        if chosen is None and request.user.is_authenticated:
            chosen = stored_language(request.user.pk)
            remember(request, chosen)
        if chosen:
            translation.activate(chosen)
            request.LANGUAGE_CODE = translation.get_language()
        return self.get_response(request)


def _compiled_at(request: HttpRequest, lang: str) -> datetime | None:
    """When the language's JavaScript catalog was last compiled (None: it has
    none, English)."""
    compiled = [
        Path(base, to_locale(lang), "LC_MESSAGES", "djangojs.mo")
        for base in settings.LOCALE_PATHS
    ]
    times = [p.stat().st_mtime for p in compiled if p.exists()]
    return datetime.fromtimestamp(max(times), tz=UTC) if times else None


@cache_control(max_age=3600)
@last_modified(_compiled_at)
def catalog(request: HttpRequest, lang: str) -> HttpResponseBase:
    """Django's JavaScript catalog of `lang`, our strings only (the page names
    the language in the URL, so the browser may keep each language's for an
    hour, then revalidate it by the compiled catalog's time)."""
    if lang not in dict(settings.LANGUAGES):
        raise Http404("No such language.")
    view = JavaScriptCatalog.as_view(domain="djangojs", packages=["chat"])
    with translation.override(lang):
        return view(request)
