"""The sidebar's forms: a folder's name, and where a conversation is filed."""

from __future__ import annotations

import unicodedata
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

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
        name = forms.CharField(
            error_messages={"required": _("Give the folder a name.")}
        )
        name.validators = []  # NUL too is stripped by `clean_name`, not refused
        self.fields["name"] = name

    def clean_name(self) -> str:
        name = clean_name(self.cleaned_data.get("name") or "")
        if not name:
            raise forms.ValidationError(_("Give the folder a name."))
        if len(name) > NAME_MAX:
            raise forms.ValidationError(
                _(
                    "A folder name is at most %(limit)d characters "
                    "(this one has %(length)d)."
                )
                % {"limit": NAME_MAX, "length": len(name)}
            )
        taken = Folder.objects.filter(owner=self.instance.owner, name__iexact=name)
        if taken.exclude(pk=self.instance.pk).exists():
            raise forms.ValidationError(
                _("You already have a folder named “%(name)s”.") % {"name": name}
            )
        return name

    def name_taken(self) -> None:
        """Another request took the name between the check and the save."""
        self.add_error("name", _("You already have a folder with that name."))
