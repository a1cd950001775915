"""The user page's API keys section (`templates/chat/_api_keys.html`): the form
that makes a key, and what the section shows. Its views are in
`chat.web.account.api_keys`; the page (`chat.web.account.views`) shows it too."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from chat.http.requests import SignedInRequest
from chat.models import ApiKey, ModelProfile, SiteDefaults
from chat.models.api_keys import api_access_for

EXPIRY_DAYS = {"30d": 30, "90d": 90, "365d": 365}


class ApiKeyForm(forms.Form):
    name = forms.CharField(
        label=_("Name"),
        max_length=100,
        help_text=_("What will use it, e.g. “laptop editor” or “nightly report”."),
        error_messages={"required": _("Give the key a name: what will use it.")},
    )
    expiry = forms.ChoiceField(
        choices=[
            ("30d", _("In 30 days")),
            ("90d", _("In 90 days")),
            ("365d", _("In a year")),
            ("never", _("Never")),
            ("date", _("On a date…")),
        ],
        initial="90d",
        label=_("Expires"),
    )
    expires_on = forms.DateField(
        required=False,
        label=_("Expires on"),
        help_text=_("At 00:00 UTC that day."),
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    profiles = forms.ModelMultipleChoiceField(
        queryset=ModelProfile.objects.none(),
        required=False,
        label=_("Only these models"),
        help_text=_("None ticked: every model you may use, now and later."),
        widget=forms.CheckboxSelectMultiple,
        error_messages={
            "invalid_choice": _(
                "That model is not one you may use. Choose from the list."
            ),
            "invalid_pk_value": _(
                "That model is not one you may use. Choose from the list."
            ),
        },
    )
    store_conversations = forms.BooleanField(
        required=False,
        label=_("Keep its answers as conversations"),
        help_text=_(
            "In your list, with the questions sent. Off: they stay out of "
            "your list (only the last question and the answer are kept, for the "
            "usage figures)."
        ),
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["profiles"]
        field.queryset = ModelProfile.objects.usable_by(user).order_by("pk")  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("expiry") == "date":
            day = data.get("expires_on")
            if day is None:
                self.add_error("expires_on", _("Pick the date the key expires."))
            elif day <= timezone.now().date():
                self.add_error(
                    "expires_on",
                    _("Pick a date after today: an expired key cannot be used."),
                )
        return data

    def expires_at(self) -> datetime | None:
        choice = self.cleaned_data["expiry"]
        if choice in EXPIRY_DAYS:
            return timezone.now() + timedelta(days=EXPIRY_DAYS[choice])
        if choice == "date":
            day: date = self.cleaned_data["expires_on"]
            return datetime.combine(day, time.min, tzinfo=UTC)
        return None


def api_closed(user: Any) -> str:
    """Why the site's API is closed to `user`: "off" (for everyone), "teams"
    (open to some teams, not theirs), or "" (open to them)."""
    if api_access_for(user):
        return ""
    return "teams" if SiteDefaults.load().api_enabled else "off"


def api_keys_section(
    request: SignedInRequest,
    *,
    form: ApiKeyForm | None = None,
    new: tuple[ApiKey, str] | None = None,
    notice: str = "",
) -> dict[str, object]:
    """The section's context. `new`: a key just made, and the key itself,
    shown this once (only its digest is stored)."""
    user = request.user
    closed = api_closed(user)
    context: dict[str, object] = {
        "api_keys": ApiKey.objects.filter(user_id=user.pk).prefetch_related("profiles"),
        "api_closed": closed,
        "api_key_form": None if closed else form or ApiKeyForm(user=user),
        "api_notice": notice,
    }
    if new is not None:
        api_key, key = new
        example = api_key.usable_profiles().first()
        context |= {
            "new_api_key": api_key,
            "new_key": key,
            # The API's two faces (`chat.api`): OpenAI's under /v1, Ollama's at
            # the root, as their clients expect.
            "site_url": request.build_absolute_uri("/").rstrip("/"),
            "example_model": example.tag if example else "MODEL",
        }
    return context
