from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/stats/", include("chat.ops.pages")),
    path("admin/", admin.site.urls),
    path("healthz", include("chat.ops.health")),
    path("metrics", include("chat.ops.metrics")),
    # The API for scripts and tools (chat.api): /v1/ and /api/.
    path("", include("chat.api.urls")),
    path("", include("chat.web.urls")),
]
