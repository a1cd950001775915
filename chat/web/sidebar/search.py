"""Search over one's own conversations (chat.models.search): the results as a
partial for the Ctrl+K dialog (htmx), or a whole page without JavaScript."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from chat.http.requests import SignedInRequest
from chat.models import search as finder
from chat.web.sidebar.lists import sidebar_context

PAGE = 20
MOST = 100


def _limit(raw: str | None) -> int:
    try:
        return max(PAGE, min(MOST, int(raw or PAGE)))
    except ValueError:
        return PAGE


@login_required
@require_GET
def search(request: SignedInRequest) -> HttpResponse:
    text = request.GET.get("q", "")
    thinking = request.GET.get("thinking") == "1"
    limit = _limit(request.GET.get("limit"))
    error, status = "", 200
    try:
        query = finder.parse(text, thinking=thinking)
    except finder.QueryTooLong as refused:
        query, error, status = finder.Query(()), str(refused), 422
    found = finder.search(request.user, query, limit=limit + 1)
    context = {
        "q": text,
        "thinking": thinking,
        "error": error,
        "searched": not query.empty,
        "hits": [(hit, hit.snippet(query)) for hit in found[:limit]],
        "more_limit": limit + PAGE if len(found) > limit and limit < MOST else None,
    }
    if request.htmx:
        return render(request, "chat/_search_results.html", context, status=status)
    context.update(sidebar_context(request))
    return render(request, "chat/search.html", context, status=status)
