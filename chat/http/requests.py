"""What the views are given and the plain answers they give: a request as
django-htmx and @login_required leave it (for the type checker), a text
response."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


class SignedInRequest(HtmxHttpRequest):
    """What a @login_required view receives."""

    user: User


def text_response(content: str, status: int = 200) -> HttpResponse:
    return HttpResponse(
        content, status=status, content_type="text/plain; charset=utf-8"
    )
