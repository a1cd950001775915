from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/stats/", include("chat.admin_views")),
    path("admin/", admin.site.urls),
    path("healthz", include("chat.health")),
    path("metrics", include("chat.metrics")),
    path("", include("chat.urls")),
]
