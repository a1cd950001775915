"""A live link's viewer is shown a question's files through the link, or not
at all when the link leaves them out (chat.live.protocol.share_frames)."""

from __future__ import annotations

import pytest

from chat.live.protocol import share_frames
from chat.models import ShareLink

pytestmark = pytest.mark.django_db

PAYLOAD = {
    "id": 7,
    "role": "user",
    "status": "done",
    "content": "See?",
    "thinking": "",
    "client_id": "c-1",
    "model": "",
    "stats": {},
    "error_code": "",
    "error_detail": "",
    "dom_id": "message-7",
    "html": "",
    "attachments": [
        {
            "id": "abc123",
            "name": "screen.png",
            "size": 1234,
            "kind": "image",
            "tokens": 20,
            "note": "",
            "thumbnail": True,
        }
    ],
}


def test_a_viewer_opens_the_files_through_the_link(conversation):
    link, token = ShareLink.create_for(conversation, mode=ShareLink.Mode.LIVE)
    shared = share_frames.shared_message(PAYLOAD, 1, link, token)
    frame = share_frames.message(shared)
    assert f'src="/s/{token}/files/abc123/thumbnail/"' in frame["message"]["html"]
    assert frame["message"]["attachments"][0]["id"] == "abc123"
    link.include_attachments = False
    shared = share_frames.shared_message(PAYLOAD, 1, link, token)
    frame = share_frames.message(shared)
    assert "abc123" not in frame["message"]["html"]
    assert frame["message"]["attachments"] == []
