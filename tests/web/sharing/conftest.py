"""The shared-links tests' conversation."""

from __future__ import annotations

import pytest
from django.core.management.color import no_style
from django.db import connection

from chat.models import Conversation, Message


@pytest.fixture
def talk(alice, demo_profile):
    """A conversation and message ids far from any other number on the page."""
    conversation = Conversation.objects.create(
        pk=918273, owner=alice, model_profile=demo_profile, title="Streams"
    )
    conversation.messages.create(pk=827364, role="user", content="What is a stream?")
    conversation.messages.create(
        pk=827365,
        role="assistant",
        content="A flow of **data**.",
        thinking="Secret reasoning here.",
        model_tag="qwen3-demo:8b",
    )
    # New rows come after these, as they would in a real database.
    with connection.cursor() as cursor:
        for sql in connection.ops.sequence_reset_sql(
            no_style(), [Conversation, Message]
        ):
            cursor.execute(sql)
    return conversation
