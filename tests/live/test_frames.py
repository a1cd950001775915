from __future__ import annotations

import json

import pytest

from chat.live import frames


def test_parse_send():
    assert frames.parse('{"type":"send","content":"hi","client_id":"x"}') == {
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
    assert frames.parse(text) == {
        "type": "send",
        "content": "",
        "client_id": "",
        "attachments": ["a1", "b2"],
        "truncate_documents": True,
    }


def test_parse_resume_defaults_thinking_offset():
    parsed = frames.parse('{"type":"resume","message_id":3,"offset":7}')
    assert parsed == {
        "type": "resume",
        "message_id": 3,
        "offset": 7,
        "thinking_offset": 0,
    }


def test_parse_regenerate_and_edit():
    assert frames.parse('{"type":"regenerate"}') == {"type": "regenerate"}
    assert frames.parse('{"type":"edit","message_id":4,"content":"again"}') == {
        "type": "edit",
        "message_id": 4,
        "content": "again",
        "attachments": None,  # keeps its files
        "truncate_documents": False,
    }
    edit = '{"type":"edit","message_id":4,"content":"","attachments":["n1"]}'
    assert frames.parse(edit)["attachments"] == ["n1"]


def test_removed_lists_the_replaced_messages():
    assert frames.removed([3, 4]) == {"type": "removed", "message_ids": [3, 4]}


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
    with pytest.raises(frames.FrameError) as caught:
        frames.parse(text)
    assert caught.value.code == code
    assert caught.value.detail


def test_parse_rejects_oversized_frames(settings):
    settings.MESSAGE_MAX_CHARS = 10
    with pytest.raises(frames.FrameError) as caught:
        frames.parse('{"type":"stop","x":"' + "a" * 5000 + '"}')
    assert caught.value.code == "frame_too_large"


@pytest.mark.parametrize(
    "frame",
    [
        frames.delta("content", 7, 'a "quoted" é 🙂 \n\x00 line'),
        frames.start(3, "llama-demo:3b", None),
        frames.error(None, "busy", "Wait."),
        frames.removed([1, 2, 3]),
    ],
)
def test_encode_writes_the_frame_as_json_with_utf8_as_is(frame):
    text = frames.encode(frame)
    assert json.loads(text) == frame
    assert "\\u00e9" not in text and "\\ud83d" not in text  # not escaped


def test_encode_falls_back_to_the_standard_library_for_what_orjson_refuses():
    # A lone surrogate, an integer past 64 bits: encoded as they always were.
    for frame in (frames.delta("content", 7, "a\ud800b"), frames.removed([2**70])):
        assert frames.encode(frame) == json.dumps(frame, ensure_ascii=False)
