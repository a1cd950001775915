"""Fixtures of the attachment tests: the storage they run twice over (the
media folder, then a bucket of a real S3-compatible server: tests/files/s3.py),
a model that sees images, alice's picture sent with a question."""

from __future__ import annotations

import pytest

from chat.models import Attachment
from tests.files import samples
from tests.files.s3 import s3_server, storage  # noqa: F401 (fixtures)
from tests.web.conversations.attachments.attaching import upload


@pytest.fixture
def vision(demo_profile):
    demo_profile.supports_vision = True
    demo_profile.save()
    return demo_profile


@pytest.fixture
def picture(alice_client, conversation, vision):
    """alice's screenshot, sent with a question of `conversation`."""
    response = upload(
        alice_client, samples.png(), "screen.png", conversation=conversation.pk
    )
    attachment = Attachment.objects.get(public_id=response.json()["id"])
    attachment.message = conversation.messages.create(role="user", content="See?")
    attachment.save()
    return attachment
