"""Teams: a member's page and conversations, the admins' management, and the
invitation links that make an account."""

from __future__ import annotations

from django.urls import path

from chat.web.teams import invitations, manage, views

urlpatterns = [
    path("team/", views.team_home, name="team_home"),
    path(
        "team/invitations/<int:pk>/",
        views.answer_invitation,
        name="team_answer_invitation",
    ),
    # The team's admins manage it (chat.web.teams.manage).
    path("team/<int:pk>/manage/", manage.team_manage, name="team_manage"),
    path("team/<int:pk>/members/", manage.add_member, name="team_add_member"),
    path(
        "team/<int:pk>/members/<int:member_pk>/remove/",
        manage.remove_member,
        name="team_remove_member",
    ),
    path(
        "team/<int:pk>/members/<int:member_pk>/role/",
        manage.set_role,
        name="team_set_role",
    ),
    path("team/<int:pk>/invite/", manage.invite, name="team_invite"),
    path("team/c/<int:pk>/", views.team_conversation, name="team_conversation"),
    path("team/c/<int:pk>/copy/", views.continue_in_copy, name="continue_in_copy"),
    path(
        "team/c/<int:pk>/messages/before/<int:before>/",
        views.team_older_messages,
        name="team_older_messages",
    ),
    path(
        "team/c/<int:pk>/messages/<int:ordinal>/source/",
        views.team_message_source,
        name="team_message_source",
    ),
    path("invite/<str:token>/", invitations.accept_invitation, name="invitation"),
]
