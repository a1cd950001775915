from __future__ import annotations

import json

import pytest

from chat.live.protocol import frames


def test_removed_lists_the_replaced_messages():
    assert frames.removed([3, 4]) == {"type": "removed", "message_ids": [3, 4]}


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
