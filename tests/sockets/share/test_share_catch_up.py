"""A shared link's catch-up (the messages after the viewer's page) is the socket's
own task: a viewer who leaves stops it, however long the conversation."""

from __future__ import annotations

import logging
import re

import pytest
from channels.db import database_sync_to_async

from chat.models import Message, ShareLink
from tests.support.communicators import open_viewer

pytestmark = pytest.mark.django_db(transaction=True)

MESSAGES = 400


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def share_log():
    handler = Lines()
    logger = logging.getLogger("chat.sockets.share_consumers")
    logger.addHandler(handler)
    yield handler.lines
    logger.removeHandler(handler)


def _long_conversation(conversation) -> str:
    Message.objects.append_branch(
        [
            Message(conversation=conversation, role=role, content=f"message {i}")
            for i in range(MESSAGES)
            for role in ["user" if i % 2 == 0 else "assistant"]
        ]
    )
    _, token = ShareLink.create_for(conversation, mode=ShareLink.Mode.LIVE)
    return token


async def test_a_viewer_who_leaves_at_once_stops_the_catch_up(conversation, share_log):
    token = await database_sync_to_async(_long_conversation)(conversation)
    viewer = await open_viewer(token, query="?seen=0")  # a page older than all
    # Long enough for all of it, were it still running after the disconnect.
    await viewer.disconnect(timeout=120)
    stopped = [line for line in share_log if line.startswith("catch-up stopped")]
    assert stopped, share_log
    sent, missed = map(int, re.findall(r"\d+", stopped[0]))
    assert missed == MESSAGES and sent < MESSAGES
