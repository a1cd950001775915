"""The team page's management: a team's admins (and staff) invite people
who have an account (they join by accepting, `chat.web.teams.views`), remove
members, change roles, see the team's usage this period, and make invitation
links for the team. Everyone else is told nothing: a 404 to those off the team,
a 403 to its plain members. The rules and the audit live on the model
(`Team.invite_member`, `remove_member`, `set_role`)."""

from __future__ import annotations

from functools import wraps
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from chat.http.client_address import client_address
from chat.http.requests import SignedInRequest
from chat.models import AuditEvent, Invitation, Membership, Team
from chat.models.quotas import team_usage

# The accept page's path (chat.web.teams.invitations): the link holds the token.
INVITATION_PATH = "/invite/{token}/"


class AddMemberForm(forms.Form):
    username = forms.CharField(label=_("Username"), max_length=150)


class InviteForm(forms.Form):
    email = forms.EmailField(
        label=_("Email"),
        required=False,
        help_text=_("Only this address may use the link. Blank: anyone who has it."),
    )

    def clean_email(self) -> str:
        email: str = self.cleaned_data["email"]
        users = get_user_model()._default_manager
        if email and users.filter(email__iexact=email).exists():
            # An invitation makes a new account; this person has one.
            raise forms.ValidationError(
                _(
                    "%(email)s has an account here already: add them by their "
                    "username instead."
                ),
                params={"email": email},
            )
        return email


class _PlainMember(Exception):
    """A member who is not a team admin asked for the team's management."""


def _managed(request: SignedInRequest, pk: int) -> Team:
    team = get_object_or_404(Team, pk=pk)
    if team.managed_by(request.user):
        return team
    if team.memberships.filter(user_id=request.user.pk).exists():
        raise _PlainMember
    raise Http404("No such team.")


def _page(
    request: SignedInRequest,
    team: Team,
    *,
    status: int = 200,
    error: str = "",
    **context: Any,
) -> HttpResponse:
    context = {
        "team": team,
        "usage": team_usage(team),
        "invited": Invitation.objects.filter(
            team=team, invitee__isnull=False, used_at=None
        ).select_related("invitee"),
        "add_form": context.pop("add_form", None) or AddMemberForm(),
        "invite_form": context.pop("invite_form", None) or InviteForm(),
        "roles": Membership.Role.choices,
        "error": error,
        **context,
    }
    return render(request, "chat/team_manage.html", context, status=status)


def _refused(request: SignedInRequest, team: Team, refusal: Exception) -> HttpResponse:
    return _page(request, team, status=400, error=str(refusal))


def _membership(team: Team, member_pk: int) -> Membership:
    return get_object_or_404(Membership, pk=member_pk, team=team)


def managed_view(view: Any) -> Any:
    """Signed in, and a 403 page (not the generic one) for plain members."""

    @login_required
    @wraps(view)
    def wrapped(request: SignedInRequest, pk: int, **kwargs: Any) -> HttpResponse:
        try:
            team = _managed(request, pk)
        except _PlainMember:
            return render(request, "chat/team_forbidden.html", status=403)
        response: HttpResponse = view(request, team, **kwargs)
        return response

    return wrapped


@managed_view
@require_GET
@never_cache
def team_manage(request: SignedInRequest, team: Team) -> HttpResponse:
    return _page(request, team)


@managed_view
@require_POST
def add_member(request: SignedInRequest, team: Team) -> HttpResponse:
    form = AddMemberForm(request.POST)
    if not form.is_valid():
        return _page(request, team, status=400, add_form=form)
    try:
        invitation = team.invite_member(
            form.cleaned_data["username"],
            by=request.user,
            address=client_address(request),
        )
    except Team.Refused as refusal:
        return _page(request, team, status=400, add_form=form, error=str(refusal))
    messages.success(
        request,
        _("%(username)s is invited: they join when they accept on their team page.")
        % {"username": invitation.invitee.get_username()},
    )
    return redirect("team_manage", pk=team.pk)


@managed_view
@require_POST
def remove_member(request: SignedInRequest, team: Team, member_pk: int) -> HttpResponse:
    membership = _membership(team, member_pk)
    try:
        team.remove_member(membership, by=request.user, address=client_address(request))
    except Team.Refused as refusal:
        return _refused(request, team, refusal)
    messages.success(
        request,
        _("%(username)s left the team.") % {"username": membership.user.get_username()},
    )
    if not team.managed_by(request.user):  # they removed themselves
        return redirect("team_home")
    return redirect("team_manage", pk=team.pk)


@managed_view
@require_POST
def set_role(request: SignedInRequest, team: Team, member_pk: int) -> HttpResponse:
    membership = _membership(team, member_pk)
    try:
        team.set_role(
            membership,
            request.POST.get("role", ""),
            by=request.user,
            address=client_address(request),
        )
    except Team.Refused as refusal:
        return _refused(request, team, refusal)
    if not team.managed_by(request.user):  # they gave up their own admin role
        return redirect("team_home")
    return redirect("team_manage", pk=team.pk)


@managed_view
@require_POST
@never_cache
def invite(request: SignedInRequest, team: Team) -> HttpResponse:
    form = InviteForm(request.POST)
    if not form.is_valid():
        return _page(request, team, status=400, invite_form=form)
    email = form.cleaned_data["email"]
    invitation, token = Invitation.create_with_token(
        created_by=request.user, team=team, email=email
    )
    AuditEvent.record(
        AuditEvent.Kind.INVITATION_CREATED,
        actor=request.user,
        address=client_address(request),
        username=email,
        invitation=invitation.pk,
        team=team.name,
        team_id=team.pk,
        email=email,
        expires_at=invitation.expires_at.isoformat(),
    )
    # Shown this once: only the token's hash is stored.
    link = request.build_absolute_uri(INVITATION_PATH.format(token=token))
    return _page(request, team, invitation=invitation, invitation_link=link)
