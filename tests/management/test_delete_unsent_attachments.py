"""`manage.py delete_unsent_attachments` (chat.models.Attachment.delete_unsent)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.utils import timezone

from chat.models import Attachment
from tests.files.attaching import attach

pytestmark = pytest.mark.django_db


def test_it_deletes_old_unsent_uploads_and_their_files(
    alice, bob, conversation, django_capture_on_commit_callbacks
):
    old = [attach(user, "a.txt", b"forgotten") for user in (alice, bob)]
    fresh = attach(alice, "b.txt", b"being written about")
    sent = attach(alice, "c.txt", b"sent", conversation=conversation)
    sent.message = conversation.messages.create(role="user", content="q")
    sent.save()
    day_ago = timezone.now() - timedelta(days=1, seconds=1)
    Attachment.objects.filter(pk__in=[a.pk for a in (*old, sent)]).update(
        created_at=day_ago
    )
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("delete_unsent_attachments", stdout=out)
    assert out.getvalue() == "Deleted 2 unsent files.\n"
    assert set(Attachment.objects.all()) == {fresh, sent}
    assert not any(default_storage.exists(a.storage_name) for a in old)
    assert default_storage.exists(fresh.storage_name)
