"""Folders: a user's own groups of conversations in the sidebar."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils.translation import gettext_lazy


class Folder(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="folders",
        verbose_name=gettext_lazy("owner"),
    )
    name = models.CharField(max_length=80, verbose_name=gettext_lazy("name"))
    created_at = models.DateTimeField(
        auto_now_add=True, verbose_name=gettext_lazy("created at")
    )

    class Meta:
        verbose_name = gettext_lazy("folder")
        verbose_name_plural = gettext_lazy("folders")
        ordering = [Lower("name"), "pk"]
        constraints = [
            models.UniqueConstraint(
                "owner", Lower("name"), name="folder_name_unique_per_owner"
            )
        ]

    def __str__(self) -> str:
        return self.name
