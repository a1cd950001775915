"""Shared links made in the sharing tests: by the model, and by the owner's
dialog."""

from __future__ import annotations

from django.urls import reverse

from chat.models import ShareLink


def share(conversation, **kwargs) -> str:
    return ShareLink.create_for(conversation, **kwargs)[1]


def create(client, conversation, **data):
    form = {"mode": "snapshot", "expiry": "7d", **data}
    return client.post(reverse("create_share_link", args=[conversation.pk]), form)
