"""The invitation link's page (`/invite/<token>/`): the invitee picks a
username and a password and is signed in, on the invitation's team.

Every refusal is a page that says why (unknown link, used, expired, local
passwords switched off, already signed in); a wrong email for a bound
invitation is an error on the form. The account, its team membership and the
spent invitation are stored together or not at all (`Invitation.accept`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.db import IntegrityError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods

from chat.accounts.usernames import LookAlikeRefused
from chat.http.client_address import client_address
from chat.models import Invitation
from chat.models.accounts import WRONG_EMAIL

# Marked here, translated where shown (the tests compare the English).
UNKNOWN = gettext_noop(
    "This invitation link is not valid. Check that you copied all of it, or ask "
    "whoever invited you for a new one."
)
NO_LOCAL_SIGNIN = gettext_noop(
    "This site signs people in only through its identity provider, so an "
    "invitation cannot make an account with a password here. Sign in with your "
    "organisation's account instead."
)
USERNAME_TAKEN = gettext_noop("That username was just taken. Choose another.")


class AcceptInvitationForm(LookAlikeRefused, UserCreationForm):  # type: ignore[type-arg]
    """Username, email, the password twice (Django's password validators,
    `AUTH_PASSWORD_VALIDATORS`). Does not save: `Invitation.accept` does."""

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")

    def __init__(self, invitation: Invitation, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.invitation = invitation
        email = self.fields["email"]
        email.required = True
        # A bound invitation's address is not shown: whoever holds a forwarded
        # link does not learn it.
        if invitation.email:
            email.help_text = _("Enter the address this invitation was sent to.")

    def clean_email(self) -> str:
        email = str(self.cleaned_data["email"]).strip()
        if not self.invitation.email_matches(email):
            raise forms.ValidationError(gettext(WRONG_EMAIL), code="wrong_email")
        return email


def _refused(request: HttpRequest, message: str, status: int) -> HttpResponse:
    return render(
        request, "chat/invitation_refused.html", {"message": message}, status=status
    )


@require_http_methods(["GET", "POST"])
def accept_invitation(request: HttpRequest, token: str) -> HttpResponse:
    invitation = Invitation.objects.select_related("team").by_token(token)
    if invitation is None:
        return _refused(request, gettext(UNKNOWN), 404)
    if not settings.CHATSITE_LOCAL_SIGNIN:
        return _refused(request, gettext(NO_LOCAL_SIGNIN), 403)
    refusal = invitation.refusal()
    if refusal is not None:
        return _refused(request, str(refusal), 410)
    if request.user.is_authenticated:
        # Accepting would make a second account and sign this one out.
        return render(request, "chat/invitation_signed_in.html", status=409)
    form = AcceptInvitationForm(invitation, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = invitation.accept(
                username=form.cleaned_data["username"],
                email=form.cleaned_data["email"],
                password=form.cleaned_data["password1"],
                address=client_address(request),
            )
        except Invitation.Unusable as unusable:
            if unusable.code != "email":
                return _refused(request, str(unusable), 410)
            form.add_error("email", str(unusable))
        except IntegrityError:  # the username, taken since the form was checked
            form.add_error("username", gettext(USERNAME_TAKEN))
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect("team_home" if invitation.team_id else "home")
    context = {"form": form, "invitation": invitation}
    status = 422 if form.errors else 200
    return render(request, "chat/invitation.html", context, status=status)
