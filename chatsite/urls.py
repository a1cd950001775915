from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/stats/", include("chat.ops.pages")),
    path("admin/", admin.site.urls),
    path("healthz", include("chat.ops.health")),
    path("metrics", include("chat.ops.metrics")),
    path("", include("chat.web.urls")),
]
