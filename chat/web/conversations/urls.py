"""A conversation's pages: the home page and first question, the conversation,
its settings, older messages and versions, and its attachments."""

from __future__ import annotations

from django.urls import path

from chat.web.conversations import attachments, model_picker, tools_menu, views

urlpatterns = [
    path("", views.home, name="home"),
    path("setup/", views.setup, name="setup"),
    path("c/new/", views.new_conversation, name="new_conversation"),
    path("attachments/", attachments.upload, name="upload_attachment"),
    path("attachments/<str:public_id>/", attachments.attachment, name="attachment"),
    path(
        "attachments/<str:public_id>/thumbnail/",
        attachments.thumbnail,
        name="attachment_thumbnail",
    ),
    path("quota/line/", views.quota_line, name="quota_line"),
    path("c/<int:pk>/", views.conversation, name="conversation"),
    path("c/<int:pk>/thinking/", views.set_thinking, name="set_thinking"),
    path("c/<int:pk>/tools/", tools_menu.set_tools, name="set_tools"),
    path("models/loaded/", model_picker.loaded_models, name="loaded_models"),
    path(
        "c/<int:pk>/settings/",
        views.conversation_settings,
        name="conversation_settings",
    ),
    path("c/<int:pk>/item/", views.conversation_item, name="conversation_item"),
    path(
        "c/<int:pk>/rename/",
        views.rename_conversation,
        name="rename_conversation",
    ),
    path(
        "c/<int:pk>/delete/",
        views.delete_conversation,
        name="delete_conversation",
    ),
    path(
        "c/<int:pk>/messages/before/<int:before>/",
        views.older_messages,
        name="older_messages",
    ),
    path(
        "c/<int:pk>/messages/<int:message_id>/source/",
        views.message_source,
        name="message_source",
    ),
    path(
        "c/<int:pk>/messages/<int:message_id>/show/",
        views.show_version,
        name="show_version",
    ),
]
