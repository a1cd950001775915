"""The user's own page (`/account/`): display name, theme, the model new
conversations start with, what they used this period, their API keys (made
and revoked in `chat.web.account.api_keys`) and the export and import of their
conversations (`chat.web.transfer.views`); and the password change of local accounts
(provider accounts change it at their provider)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.views import PasswordChangeView
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils import translation
from django.utils.decorators import method_decorator
from django.utils.functional import SimpleLazyObject
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods

from chat.accounts.throttle import Attempt, too_many_failures
from chat.http.client_address import client_address
from chat.http.requests import SignedInRequest
from chat.models import (
    ApiKey,
    AuditEvent,
    ModelProfile,
    SiteDefaults,
    Theme,
    UserSettings,
    quotas,
)
from chat.models.quota_periods import QuotaPeriod
from chat.web.account.api_key_forms import api_keys_section
from chat.web.account.languages import remember
from chat.web.account.tool_credential_forms import tool_credentials_section
from chat.web.transfer.views import transfer_section


def has_local_password(user: Any) -> bool:
    """Signs in with a password kept here (not through a provider)."""
    return bool(
        user.is_authenticated
        and user.has_usable_password()
        and not user.external_accounts.exists()
    )


def usable_profiles(user: Any) -> Any:
    return ModelProfile.objects.usable_by(user)


class AccountForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = UserSettings
        fields = ["display_name", "theme", "language", "default_profile"]
        labels = {"default_profile": _("Default model")}
        help_texts = {
            "display_name": _("Shown for you on this site instead of your username."),
        }

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["default_profile"]
        field.queryset = usable_profiles(user)  # type: ignore[attr-defined]
        site = SiteDefaults.load().model_profile()
        field.empty_label = (  # type: ignore[attr-defined]
            _("The site's default (%(model)s)") % {"model": site}
            if site
            else _("The site's default")
        )
        field.error_messages["invalid_choice"] = _(
            "That model is not one you may use. Choose one from the list."
        )


def _usage(user: Any) -> dict[str, object]:
    site = SiteDefaults.load()
    answers, tokens = quotas.usage(user, site.quota_period)
    return {
        "period": QuotaPeriod(site.quota_period).label,
        "answers": answers,
        "tokens": tokens,
        "limits": quotas.limits_for(user),
    }


@login_required
@require_http_methods(["GET", "POST"])
def account(request: SignedInRequest) -> HttpResponse:
    mine = UserSettings.for_user(request.user)
    form = AccountForm(request.POST or None, instance=mine, user=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        remember(request, form.instance.language)
        # The notice below is in the language just chosen.
        chosen = form.instance.language
        translation.activate(chosen or translation.get_language_from_request(request))
        messages.success(request, _("Your settings are saved."))
        return redirect("account")
    return account_page(request, form=form, status=422 if form.errors else 200)


@login_required
@require_http_methods(["POST"])
def set_theme(request: SignedInRequest) -> HttpResponse:
    """The sidebar's theme select (static/chat/theme.js applies it at once; this
    keeps it for the user's next pages). Without htmx, back to the page."""
    theme = request.POST.get("theme", "")
    if theme not in Theme.values:
        return HttpResponse(
            _("Choose a theme: as the system, light or dark."),
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    mine = UserSettings.for_user(request.user)
    mine.theme = theme
    mine.save(update_fields=["theme"])
    if request.htmx:
        return HttpResponse(status=204)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = reverse("home")
    return redirect(back)


def account_page(
    request: SignedInRequest,
    *,
    form: AccountForm | None = None,
    api_keys: dict[str, object] | None = None,
    tool_credentials: dict[str, object] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The whole page; `api_keys`: its API keys section as `chat.web.account.api_keys`
    answered a form of that section (a new key, or the form's errors); the
    same for `tool_credentials` (`chat.web.account.tool_credentials`)."""
    if form is None:
        form = AccountForm(
            instance=UserSettings.for_user(request.user), user=request.user
        )
    chosen = form.instance.default_profile
    unusable = chosen is not None and (
        not usable_profiles(request.user).filter(pk=chosen.pk).exists()
    )
    context = {
        "form": form,
        "unusable_default": chosen if unusable else None,
        "local_password": has_local_password(request.user),
        **_usage(request.user),
        **(api_keys or api_keys_section(request)),
        **(tool_credentials or tool_credentials_section(request)),
        **transfer_section(),
    }
    return render(request, "chat/account.html", context, status=status)


class ThrottledPasswordChangeForm(PasswordChangeForm):
    """A wrong old password counts as a failed sign-in of this username from
    this address (`chat.accounts.throttle.Attempt`): a session left open must not let
    anyone guess the password at leisure."""

    def __init__(
        self, user: Any, *args: Any, request: HttpRequest, **kwargs: Any
    ) -> None:
        super().__init__(user, *args, **kwargs)
        self.request = request

    def clean_old_password(self) -> str:
        attempt = Attempt(self.request, self.user.get_username())
        if attempt.refused:
            raise too_many_failures()
        old: str = super().clean_old_password()
        attempt.succeeded()
        return old


def _active_keys(user: Any) -> int:
    return ApiKey.objects.active().filter(user_id=user.pk).count()


@method_decorator(login_required, name="dispatch")
class ChangePasswordView(PasswordChangeView):
    """Django's own (old password, new one twice, the password validators;
    the session stays signed in), only for local accounts."""

    template_name = "chat/account_password.html"
    success_url = reverse_lazy("account")
    form_class = ThrottledPasswordChangeForm

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "request": self.request}

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if request.user.is_authenticated and not has_local_password(request.user):
            raise Http404("This account's password is kept by its provider.")
        return super().dispatch(request, *args, **kwargs)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        keys = _active_keys(self.request.user)
        return {**super().get_context_data(**kwargs), "active_api_keys": keys}

    def form_valid(self, form: PasswordChangeForm) -> HttpResponse:
        # The save revokes the keys (chat.models.api_keys): counted before it.
        keys = _active_keys(self.request.user)
        response = super().form_valid(form)
        AuditEvent.record(
            AuditEvent.Kind.PASSWORD_CHANGED,
            actor=self.request.user,
            subject=self.request.user,
            address=client_address(self.request),
            method="password",
        )
        messages.success(self.request, _("Your password is changed."))
        if keys:
            messages.warning(
                self.request,
                ngettext(
                    "Your API key was revoked with your old password: make a new "
                    "one below for your scripts.",
                    "Your %(count)d API keys were revoked with your old password: "
                    "make new ones below for your scripts.",
                    keys,
                )
                % {"count": keys},
            )
        return response


@dataclass(frozen=True)
class Appearance:
    theme: str
    name: str


def _appearance_of(request: HttpRequest, user: Any) -> Appearance:
    if user is None or not user.is_authenticated:
        return Appearance(Theme.SYSTEM, "")
    mine = UserSettings.objects.filter(user_id=user.pk).first()
    # The language the session keeps for them (chat.web.account.languages), brought
    # up to date with a choice made elsewhere.
    remember(request, mine.language if mine else "")
    if mine is None:
        return Appearance(Theme.SYSTEM, user.get_username())
    return Appearance(mine.theme, mine.display_name or user.get_username())


def appearance(request: HttpRequest) -> dict[str, object]:
    """Context processor: the signed-in user's theme and the name shown for
    them (`templates/_base.html`, `templates/chat/_sidebar.html`). Lazy (a
    partial that shows neither costs no query) and read only (a user who never
    saved their settings gets the defaults, no row)."""
    user = getattr(request, "user", None)
    return {"appearance": SimpleLazyObject(lambda: _appearance_of(request, user))}
