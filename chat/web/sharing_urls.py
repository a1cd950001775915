"""Teams and shared links (appended to `chat.web.urls`)."""

from __future__ import annotations

from django.urls import path

from chat.web import sharing, team_admin, teams

urlpatterns = [
    path("c/<int:pk>/share/", sharing.share_dialog, name="share_dialog"),
    path("c/<int:pk>/share/new/", sharing.create_share_link, name="create_share_link"),
    path("c/<int:pk>/share/team/", sharing.share_with_team, name="share_with_team"),
    path("links/", sharing.my_links, name="my_links"),
    path(
        "links/<int:link_pk>/update/",
        sharing.update_share_link,
        name="update_share_link",
    ),
    path(
        "links/<int:link_pk>/revoke/",
        sharing.revoke_share_link,
        name="revoke_share_link",
    ),
    path("s/<str:token>/", sharing.shared, name="shared"),
    path(
        "s/<str:token>/messages/before/<int:before>/",
        sharing.shared_older_messages,
        name="shared_older_messages",
    ),
    path(
        "s/<str:token>/files/<str:public_id>/",
        sharing.shared_file,
        name="shared_file",
    ),
    path(
        "s/<str:token>/files/<str:public_id>/thumbnail/",
        sharing.shared_thumbnail,
        name="shared_thumbnail",
    ),
    path(
        "s/<str:token>/messages/<int:ordinal>/source/",
        sharing.shared_message_source,
        name="shared_message_source",
    ),
    path("team/", teams.team_home, name="team_home"),
    path(
        "team/invitations/<int:pk>/",
        teams.answer_invitation,
        name="team_answer_invitation",
    ),
    # The team's admins manage it (chat.web.team_admin).
    path("team/<int:pk>/manage/", team_admin.team_manage, name="team_manage"),
    path("team/<int:pk>/members/", team_admin.add_member, name="team_add_member"),
    path(
        "team/<int:pk>/members/<int:member_pk>/remove/",
        team_admin.remove_member,
        name="team_remove_member",
    ),
    path(
        "team/<int:pk>/members/<int:member_pk>/role/",
        team_admin.set_role,
        name="team_set_role",
    ),
    path("team/<int:pk>/invite/", team_admin.invite, name="team_invite"),
    path("team/c/<int:pk>/", teams.team_conversation, name="team_conversation"),
    path("team/c/<int:pk>/copy/", teams.continue_in_copy, name="continue_in_copy"),
    path(
        "team/c/<int:pk>/messages/before/<int:before>/",
        teams.team_older_messages,
        name="team_older_messages",
    ),
    path(
        "team/c/<int:pk>/messages/<int:ordinal>/source/",
        teams.team_message_source,
        name="team_message_source",
    ),
]
