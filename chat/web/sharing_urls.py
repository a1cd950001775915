"""Teams and shared links (appended to `chat.urls`)."""

from __future__ import annotations

from django.urls import path

from chat import share_views, team_views

urlpatterns = [
    path("c/<int:pk>/share/", share_views.share_dialog, name="share_dialog"),
    path(
        "c/<int:pk>/share/new/", share_views.create_share_link, name="create_share_link"
    ),
    path("c/<int:pk>/share/team/", share_views.share_with_team, name="share_with_team"),
    path("links/", share_views.my_links, name="my_links"),
    path(
        "links/<int:link_pk>/update/",
        share_views.update_share_link,
        name="update_share_link",
    ),
    path(
        "links/<int:link_pk>/revoke/",
        share_views.revoke_share_link,
        name="revoke_share_link",
    ),
    path("s/<str:token>/", share_views.shared, name="shared"),
    path(
        "s/<str:token>/messages/before/<int:before>/",
        share_views.shared_older_messages,
        name="shared_older_messages",
    ),
    path(
        "s/<str:token>/messages/<int:ordinal>/source/",
        share_views.shared_message_source,
        name="shared_message_source",
    ),
    path("team/", team_views.team_home, name="team_home"),
    path("team/c/<int:pk>/", team_views.team_conversation, name="team_conversation"),
    path("team/c/<int:pk>/copy/", team_views.continue_in_copy, name="continue_in_copy"),
    path(
        "team/c/<int:pk>/messages/before/<int:before>/",
        team_views.team_older_messages,
        name="team_older_messages",
    ),
    path(
        "team/c/<int:pk>/messages/<int:ordinal>/source/",
        team_views.team_message_source,
        name="team_message_source",
    ),
]
