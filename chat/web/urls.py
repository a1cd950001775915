"""The pages, a feature each (`chat.web`'s docstring): the URL names and
paths are the templates' and the tests'."""

from __future__ import annotations

from django.urls import include, path

urlpatterns = [
    path("", include("chat.web.conversations.urls")),
    path("", include("chat.web.account.urls")),
    path("", include("chat.web.sidebar.urls")),
    path("", include("chat.web.sharing.urls")),
    path("", include("chat.web.teams.urls")),
    path("", include("chat.web.transfer.urls")),
]
