"""Export and import (appended to `chat.web.urls`)."""

from __future__ import annotations

from django.urls import path

from chat.web import transfer

# chat.web.request_bodies: the route of the import's upload.
IMPORT_PATH = "account/import/"

urlpatterns = [
    path(
        "c/<int:pk>/export.<str:kind>",
        transfer.export_conversation,
        name="export_conversation",
    ),
    path("account/export/", transfer.export_all, name="export_all"),
    path(IMPORT_PATH, transfer.import_conversations, name="import_conversations"),
]
