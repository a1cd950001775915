"""The form that makes a shared link."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from chat.models import ShareLink

EXPIRY_DAYS = {"1d": 1, "7d": 7, "30d": 30}


class ShareLinkForm(forms.Form):
    mode = forms.ChoiceField(
        label=_("Mode"),
        choices=[
            (ShareLink.Mode.SNAPSHOT, _("Snapshot: the conversation as it is now")),
            (ShareLink.Mode.LIVE, _("Live: follows the conversation as it is written")),
        ],
        initial=ShareLink.Mode.SNAPSHOT,
        widget=forms.RadioSelect,
    )
    include_thinking = forms.BooleanField(required=False, label=_("Include thinking"))
    # A turn's tool calls are shown either way; what the tools gave may be
    # private (an intranet page, a database row).
    include_tool_results = forms.BooleanField(
        required=False, initial=True, label=_("Include tool results")
    )
    include_attachments = forms.BooleanField(
        required=False, initial=True, label=_("Include attached files")
    )
    expiry = forms.ChoiceField(
        choices=[
            ("never", _("Never")),
            ("1d", _("In 1 day")),
            ("7d", _("In 7 days")),
            ("30d", _("In 30 days")),
            ("custom", _("On…")),
        ],
        initial="7d",
        label=_("Expires"),
    )
    expires_on = forms.DateTimeField(
        required=False,
        label=_("Expires on"),
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        choice = data.get("expiry")
        if choice == "custom":
            moment = data.get("expires_on")
            if moment is None:
                self.add_error("expires_on", _("Pick the date the link expires."))
            elif moment <= timezone.now():
                self.add_error("expires_on", _("Pick a moment in the future."))
        return data

    def expires_at(self) -> datetime | None:
        choice = self.cleaned_data["expiry"]
        if choice in EXPIRY_DAYS:
            return timezone.now() + timedelta(days=EXPIRY_DAYS[choice])
        if choice == "custom":
            moment: datetime = self.cleaned_data["expires_on"]
            return moment
        return None
