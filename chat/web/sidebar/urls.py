"""The sidebar's URLs: its lists, folders and search."""

from __future__ import annotations

from django.urls import path

from chat.web.sidebar import search, views

urlpatterns = [
    path("search/", search.search, name="search"),
    path("sidebar/page/", views.sidebar_page, name="sidebar_page"),
    path("sidebar/archived/", views.archived, name="archived"),
    path("c/<int:pk>/pin/", views.pin_conversation, name="pin_conversation"),
    path("c/<int:pk>/unpin/", views.unpin_conversation, name="unpin_conversation"),
    path(
        "c/<int:pk>/archive/",
        views.archive_conversation,
        name="archive_conversation",
    ),
    path(
        "c/<int:pk>/restore/",
        views.restore_conversation,
        name="restore_conversation",
    ),
    path("c/<int:pk>/move/", views.move_conversation, name="move_conversation"),
    path("folders/new/", views.create_folder, name="create_folder"),
    path("folders/<int:pk>/page/", views.folder_page, name="folder_page"),
    path("folders/<int:pk>/rename/", views.rename_folder, name="rename_folder"),
    path("folders/<int:pk>/delete/", views.delete_folder, name="delete_folder"),
]
