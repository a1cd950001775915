"""A live link's viewer is shown a question's files through the link, or not
at all when the link leaves them out (chat.live.protocol.share_frames)."""

from __future__ import annotations

import pytest

from chat.live.protocol import share_frames, tool_frames
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


def test_a_viewer_sees_the_steps_and_the_results_only_if_the_link_has_them(
    conversation,
):
    link, token = ShareLink.create_for(conversation, mode=ShareLink.Mode.LIVE)
    ordinals = share_frames.Ordinals([40, 41])
    call = tool_frames.tool_call(41, "call_1", "web__search", "Search", "web")
    result = tool_frames.tool_result(
        41,
        "call_1",
        ok=True,
        preview="3 results",
        size=900,
        cut=False,
        ms=120.0,
        error=None,
        citations=[{"url": "https://example.org/", "title": "Example"}],
    )
    seen = share_frames.for_viewer(call, link, token, ordinals)
    assert seen == {**call, "message_id": 2}
    assert share_frames.for_viewer(result, link, token, ordinals) == {
        **result,
        "message_id": 2,
    }
    link.include_tool_results = False
    hidden = share_frames.for_viewer(result, link, token, ordinals)
    assert hidden is not None and hidden["preview"] == "" and hidden["citations"] == []
    assert hidden["ok"] is True and hidden["message_id"] == 2
    assert result["preview"] == "3 results"  # the owner's frame is left whole
