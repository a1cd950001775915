"""`manage.py delete_empty_conversations` (chat.models.sidebar.delete_empty)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from chat.models import Conversation

pytestmark = pytest.mark.django_db


@pytest.mark.smoke
def test_it_deletes_everyones_old_empty_conversations_and_says_how_many(alice, bob):
    day_ago = timezone.now() - timedelta(days=1, seconds=1)
    old = [Conversation.objects.create(owner=user) for user in (alice, bob)]
    fresh = Conversation.objects.create(owner=alice)
    asked = Conversation.objects.create(owner=alice)
    asked.messages.create(role="user", content="q")
    api_only = Conversation.objects.create(owner=bob, listed=False)
    Conversation.objects.filter(pk__in=[c.pk for c in (*old, asked, api_only)]).update(
        updated_at=day_ago
    )

    out = StringIO()
    call_command("delete_empty_conversations", stdout=out)
    assert out.getvalue() == "Deleted 2 empty conversations.\n"
    left = set(Conversation.objects.values_list("pk", flat=True))
    assert left == {fresh.pk, asked.pk, api_only.pk}

    out = StringIO()
    call_command("delete_empty_conversations", stdout=out)
    assert out.getvalue() == "Deleted 0 empty conversations.\n"
