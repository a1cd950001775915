"""Conversations shared with my teams: read them, continue them in a copy;
and the invitations to join a team, accepted or declined here."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from chat.http.client_address import client_address
from chat.http.requests import SignedInRequest
from chat.models import Conversation, Invitation, Team
from chat.models.teams import copy_conversation, team_conversations
from chat.web.sharing.views import author_name, read_only_page, source_of

# Team members are shown the thinking the owner sees; copies keep it.
TEAM_SEES_THINKING = True


def _team_readable(request: SignedInRequest, pk: int) -> Conversation:
    # Not shared with one of my teams: a 404, whether it exists or not.
    return get_object_or_404(team_conversations(request.user), pk=pk)


@login_required
@require_GET
def team_home(request: SignedInRequest) -> HttpResponse:
    teams = Team.objects.of(request.user).prefetch_related("members")
    context = {
        "teams": teams,
        # The teams whose page links their management (chat.web.teams.manage).
        "managed": {team.pk for team in teams if team.managed_by(request.user)},
        "shared": team_conversations(request.user).order_by("-updated_at"),
        "invitations": Invitation.objects.pending_for(request.user),
    }
    return render(request, "chat/team_home.html", context)


@login_required
@require_POST
def answer_invitation(request: SignedInRequest, pk: int) -> HttpResponse:
    invitation = get_object_or_404(Invitation.objects.pending_for(request.user), pk=pk)
    join = request.POST.get("answer") == "join"
    answered = invitation.answer(
        request.user, join=join, address=client_address(request)
    )
    team = invitation.team.name if invitation.team else ""
    if not answered:
        messages.error(request, _("That invitation was answered already."))
    elif join:
        messages.success(request, _("You are on %(team)s.") % {"team": team})
    else:
        messages.success(request, _("You declined to join %(team)s.") % {"team": team})
    return redirect("team_home")


@login_required
@require_GET
def team_conversation(request: SignedInRequest, pk: int) -> HttpResponse:
    conversation = _team_readable(request, pk)
    context = {
        "conversation": conversation,
        "title": conversation.display_title,
        "author": author_name(conversation.owner),
        **_page(conversation, None),
    }
    return render(request, "chat/team_conversation.html", context)


@login_required
@require_GET
def team_older_messages(request: SignedInRequest, pk: int, before: int) -> HttpResponse:
    """The page of messages before the ordinal `before`, as the page shows them."""
    context = _page(_team_readable(request, pk), before)
    return render(request, "chat/_message_page.html", context)


def _page(conversation: Conversation, before: int | None) -> dict[str, object]:
    return read_only_page(
        conversation.messages.all(),
        before,
        key=conversation.pk,
        kind="team",
        include_thinking=TEAM_SEES_THINKING,
    )


@login_required
@require_POST
def continue_in_copy(request: SignedInRequest, pk: int) -> HttpResponseRedirect:
    source = _team_readable(request, pk)
    copy = copy_conversation(source, request.user, include_thinking=TEAM_SEES_THINKING)
    return redirect(copy)


@login_required
@require_GET
def team_message_source(
    request: SignedInRequest, pk: int, ordinal: int
) -> HttpResponse:
    return source_of(_team_readable(request, pk).messages.all(), ordinal)
