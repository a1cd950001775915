"""The sidebar's URLs (chat.web.sidebar)."""

from __future__ import annotations

from django.urls import path

from chat.web import sidebar

urlpatterns = [
    path("sidebar/page/", sidebar.sidebar_page, name="sidebar_page"),
    path("sidebar/archived/", sidebar.archived, name="archived"),
    path("c/<int:pk>/pin/", sidebar.pin_conversation, name="pin_conversation"),
    path("c/<int:pk>/unpin/", sidebar.unpin_conversation, name="unpin_conversation"),
    path(
        "c/<int:pk>/archive/",
        sidebar.archive_conversation,
        name="archive_conversation",
    ),
    path(
        "c/<int:pk>/restore/",
        sidebar.restore_conversation,
        name="restore_conversation",
    ),
    path("c/<int:pk>/move/", sidebar.move_conversation, name="move_conversation"),
    path("folders/new/", sidebar.create_folder, name="create_folder"),
    path("folders/<int:pk>/page/", sidebar.folder_page, name="folder_page"),
    path("folders/<int:pk>/rename/", sidebar.rename_folder, name="rename_folder"),
    path("folders/<int:pk>/delete/", sidebar.delete_folder, name="delete_folder"),
]
