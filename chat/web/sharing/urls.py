"""Shared links: made, changed and revoked by the owner, read by anyone with
their token."""

from __future__ import annotations

from django.urls import path

from chat.web.sharing import views

urlpatterns = [
    path("c/<int:pk>/share/", views.share_dialog, name="share_dialog"),
    path("c/<int:pk>/share/new/", views.create_share_link, name="create_share_link"),
    path("c/<int:pk>/share/team/", views.share_with_team, name="share_with_team"),
    path("links/", views.my_links, name="my_links"),
    path(
        "links/<int:link_pk>/update/",
        views.update_share_link,
        name="update_share_link",
    ),
    path(
        "links/<int:link_pk>/revoke/",
        views.revoke_share_link,
        name="revoke_share_link",
    ),
    path("s/<str:token>/", views.shared, name="shared"),
    path(
        "s/<str:token>/messages/before/<int:before>/",
        views.shared_older_messages,
        name="shared_older_messages",
    ),
    path(
        "s/<str:token>/files/<str:public_id>/",
        views.shared_file,
        name="shared_file",
    ),
    path(
        "s/<str:token>/files/<str:public_id>/thumbnail/",
        views.shared_thumbnail,
        name="shared_thumbnail",
    ),
    path(
        "s/<str:token>/messages/<int:ordinal>/source/",
        views.shared_message_source,
        name="shared_message_source",
    ),
]
