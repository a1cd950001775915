from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.forms import UserCreationForm

from chat.models import Conversation


class FirstAdminForm(UserCreationForm):  # type: ignore[type-arg]
    """Creates the site's first account, which administers it."""

    def save(self, commit: bool = True):  # type: ignore[no-untyped-def]
        user = super().save(commit=False)
        user.is_staff = True
        user.is_superuser = True
        if commit:
            user.save()
        return user


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
        self.fields["title"].error_messages["required"] = "Give it a title."
