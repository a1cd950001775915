from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.forms import UserCreationForm
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from chat.accounts.usernames import LookAlikeRefused
from chat.models import Conversation, HistoryPolicy, ModelProfile


class FirstAdminForm(LookAlikeRefused, UserCreationForm):  # type: ignore[type-arg]
    """Creates the site's first account, which administers it."""

    def save(self, commit: bool = True):  # type: ignore[no-untyped-def]
        user = super().save(commit=False)
        user.is_staff = True
        user.is_superuser = True
        if commit:
            user.save()
        return user


class FirstQuestionForm(forms.Form):
    """The home page's composer: the new conversation's first question (blank
    from the sidebar's "New conversation")."""

    content = forms.CharField(label=_("Message"), required=False, strip=False)
    # The composer's model picker (blank: the owner's default, Conversation.start).
    model = forms.ModelChoiceField(
        label=_("Model"),
        queryset=ModelProfile.objects.none(),
        required=False,
        error_messages={
            "invalid_choice": _("That model is not available to you: pick another.")
        },
    )

    def __init__(self, owner: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        model = self.fields["model"]
        assert isinstance(model, forms.ModelChoiceField)
        model.queryset = ModelProfile.objects.usable_by(owner)
        # The socket's limit (chat/live/protocol/frames.py), read when used, as it does.
        self.fields["content"] = forms.CharField(
            required=False, strip=False, max_length=settings.MESSAGE_MAX_CHARS
        )


class ThinkingForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Conversation
        fields = ["thinking"]


class RenameForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Conversation
        fields = ["title"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["title"].required = True
        self.fields["title"].error_messages["required"] = _("Give it a title.")


class SettingsForm(forms.ModelForm):  # type: ignore[type-arg]
    """The conversation's settings panel. Every field carries the value it was
    shown with, and only fields the user changed are saved: a setting changed
    meanwhile elsewhere (the header's thinking toggle, another tab) is kept."""

    history_last_n = forms.IntegerField(
        label=_("Messages"), required=False, min_value=0, max_value=10_000
    )
    temperature = forms.FloatField(
        label=_("Temperature"),
        required=False,
        min_value=0,
        max_value=2,
        widget=forms.NumberInput(attrs={"step": "0.05"}),
        help_text=_("0 to 2; blank for the model's default."),
    )
    system_prompt = forms.CharField(
        label=_("System prompt"),
        required=False,
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 3}),
    )

    class Meta:
        model = Conversation
        fields = [
            "model_profile",
            "thinking",
            "history_policy",
            "history_last_n",
            "temperature",
            "system_prompt",
        ]
        labels = {"model_profile": _("Model"), "history_policy": _("History sent")}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        model = self.fields["model_profile"]
        assert isinstance(model, forms.ModelChoiceField)
        # Only the models the owner may use are offered, and one named anyway
        # (a forbidden or disabled one) is refused with invalid_choice.
        owner = self.instance.owner
        model.queryset = ModelProfile.objects.usable_by(owner)
        site_model = Conversation.site_model_for(owner)
        model.empty_label = (
            _("Site default (%(model)s)") % {"model": site_model.label}
            if site_model is not None
            else _("Site default")
        )
        model.error_messages["invalid_choice"] = _(
            "That model is not available to you: pick another."
        )
        policy = self.fields["history_policy"]
        assert isinstance(policy, forms.ChoiceField)
        policy.choices = [("", _("Default")), *HistoryPolicy.choices]
        for field in self.fields.values():
            field.show_hidden_initial = True
        # A model that cannot think: the choice is shown disabled and kept.
        try:
            profile = self.instance.effective_model().value
        except Conversation.NoModel:
            profile = None
        if profile is not None and not profile.supports_thinking:
            self.fields["thinking"].disabled = True

    @property
    def thinking_initial(self) -> SafeString:
        """The thinking choice's shown value (the panel renders its own select)."""
        return self["thinking"].as_hidden(only_initial=True)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        policy = data.get("history_policy")
        if policy == HistoryPolicy.LAST_N and data.get("history_last_n") is None:
            self.add_error(
                "history_last_n", _("Say how many earlier messages to send.")
            )
        return data

    def changes(self) -> list[str]:
        """What changed, for the notice in the conversation."""
        labels = {
            "model_profile": "model",
            "thinking": "thinking",
            "history_policy": "history",
            "history_last_n": "history",
            "temperature": "temperature",
            "system_prompt": "system prompt",
        }
        return list(dict.fromkeys(labels[name] for name in self.changed_data))

    def save(self, commit: bool = True) -> Conversation:
        """Save only what changed (see the class docstring)."""
        conversation: Conversation = self.instance
        changed = [n for n in self.changed_data if n in self.cleaned_data]
        stored = Conversation.objects.get(pk=conversation.pk)
        for name in self.Meta.fields:
            if name not in changed:
                setattr(conversation, name, getattr(stored, name))
        if commit and changed:
            conversation.save(update_fields=[*changed, "updated_at"])
        return conversation
