"""The sidebar's forms: a folder's name, and where a conversation is filed."""

from __future__ import annotations

import unicodedata
from typing import Any

from django import forms

from chat.models import Folder

NAME_MAX = Folder._meta.get_field("name").max_length or 80


def clean_name(value: str) -> str:
    """Control characters out (line breaks and tabs become spaces), runs of
    spaces made one, none at the ends."""
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in value
        if ch.isspace() or unicodedata.category(ch) != "Cc"
    )
    return " ".join(kept.split())


class FolderForm(forms.ModelForm):  # type: ignore[type-arg]
    """A folder's name: 1 to 80 characters, not the name of another of the
    owner's folders in any case. The instance carries the owner."""

    class Meta:
        model = Folder
        fields = ["name"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The limit is checked after cleaning (control characters out), with
        # its own message; the browser's maxlength would cut a paste silently.
        name = forms.CharField(error_messages={"required": "Give the folder a name."})
        name.validators = []  # NUL too is stripped by `clean_name`, not refused
        self.fields["name"] = name

    def clean_name(self) -> str:
        name = clean_name(self.cleaned_data.get("name") or "")
        if not name:
            raise forms.ValidationError("Give the folder a name.")
        if len(name) > NAME_MAX:
            raise forms.ValidationError(
                f"A folder name is at most {NAME_MAX} characters "
                f"(this one has {len(name)})."
            )
        taken = Folder.objects.filter(owner=self.instance.owner, name__iexact=name)
        if taken.exclude(pk=self.instance.pk).exists():
            raise forms.ValidationError(f"You already have a folder named “{name}”.")
        return name

    def name_taken(self) -> None:
        """Another request took the name between the check and the save."""
        self.add_error("name", "You already have a folder with that name.")
