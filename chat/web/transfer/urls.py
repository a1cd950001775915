"""Export and import."""

from __future__ import annotations

from django.urls import path

from chat.web.transfer import views

# chat.http.request_bodies: the route of the import's upload.
IMPORT_PATH = "account/import/"

urlpatterns = [
    path(
        "c/<int:pk>/export.<str:kind>",
        views.export_conversation,
        name="export_conversation",
    ),
    path("account/export/", views.export_all, name="export_all"),
    path(IMPORT_PATH, views.import_conversations, name="import_conversations"),
]
