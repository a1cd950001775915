"""Parsing what the client sends (`chat.sockets.client_frames`)."""

from __future__ import annotations

import pytest

from chat.sockets import client_frames


def test_parse_send():
    assert client_frames.parse('{"type":"send","content":"hi","client_id":"x"}') == {
        "type": "send",
        "content": "hi",
        "client_id": "x",
        "attachments": [],
        "truncate_documents": False,
    }


def test_parse_send_with_files_may_have_no_text():
    text = (
        '{"type":"send","content":"","attachments":["a1","b2"],'
        '"truncate_documents":true}'
    )
    assert client_frames.parse(text) == {
        "type": "send",
        "content": "",
        "client_id": "",
        "attachments": ["a1", "b2"],
        "truncate_documents": True,
    }


def test_parse_resume_defaults_thinking_offset():
    parsed = client_frames.parse('{"type":"resume","message_id":3,"offset":7}')
    assert parsed == {
        "type": "resume",
        "message_id": 3,
        "offset": 7,
        "thinking_offset": 0,
    }


def test_parse_regenerate_and_edit():
    assert client_frames.parse('{"type":"regenerate"}') == {"type": "regenerate"}
    assert client_frames.parse('{"type":"edit","message_id":4,"content":"again"}') == {
        "type": "edit",
        "message_id": 4,
        "content": "again",
        "attachments": None,  # keeps its files
        "truncate_documents": False,
    }
    edit = '{"type":"edit","message_id":4,"content":"","attachments":["n1"]}'
    assert client_frames.parse(edit)["attachments"] == ["n1"]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (None, "bad_frame"),
        ("{", "bad_frame"),
        ('"send"', "bad_frame"),
        ('{"content":"x"}', "unknown_type"),
        ('{"type":"send"}', "empty_message"),
        ('{"type":"send","content":"x","client_id":7}', "bad_frame"),
        ('{"type":"resume","message_id":true,"offset":0}', "bad_frame"),
        ('{"type":"resume","message_id":1,"offset":"3"}', "bad_frame"),
        ('{"type":"edit","message_id":1,"content":" "}', "empty_message"),
        ('{"type":"edit","message_id":-1,"content":"x"}', "bad_frame"),
        ('{"type":"edit","content":"x"}', "bad_frame"),
        ('{"type":"send","content":"x","attachments":"a1"}', "bad_frame"),
        ('{"type":"send","content":"x","attachments":[1]}', "bad_frame"),
        ('{"type":"send","content":"x","attachments":[""]}', "bad_frame"),
        ('{"type":"send","content":"","attachments":[]}', "empty_message"),
        ('{"type":"send","content":"x","truncate_documents":"yes"}', "bad_frame"),
    ],
)
def test_parse_rejects_with_a_code(text, code):
    with pytest.raises(client_frames.FrameError) as caught:
        client_frames.parse(text)
    assert caught.value.code == code
    assert caught.value.detail


def test_parse_rejects_oversized_frames(settings):
    settings.MESSAGE_MAX_CHARS = 10
    with pytest.raises(client_frames.FrameError) as caught:
        client_frames.parse('{"type":"stop","x":"' + "a" * 5000 + '"}')
    assert caught.value.code == "frame_too_large"
