"""Folders: a user's own groups of conversations in the sidebar."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower


class Folder(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="folders"
    )
    name = models.CharField(max_length=80)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = [Lower("name"), "pk"]
        constraints = [
            models.UniqueConstraint(
                "owner", Lower("name"), name="folder_name_unique_per_owner"
            )
        ]

    def __str__(self) -> str:
        return self.name
