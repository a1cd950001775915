from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from chat import share_urls, views
from chat.signin import SignInView

urlpatterns = [
    path("", views.home, name="home"),
    path("setup/", views.setup, name="setup"),
    path("login/", SignInView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("c/new/", views.new_conversation, name="new_conversation"),
    path("c/<int:pk>/", views.conversation, name="conversation"),
    path("c/<int:pk>/thinking/", views.set_thinking, name="set_thinking"),
    path(
        "c/<int:pk>/settings/",
        views.conversation_settings,
        name="conversation_settings",
    ),
    path("c/<int:pk>/item/", views.conversation_item, name="conversation_item"),
    path("c/<int:pk>/rename/", views.rename_conversation, name="rename_conversation"),
    path("c/<int:pk>/delete/", views.delete_conversation, name="delete_conversation"),
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

urlpatterns += share_urls.urlpatterns
