"""A socket's feed of an answer streamed by another process, with a fake socket
(no server, no database): the channel-layer events are given to it directly."""

from __future__ import annotations

from typing import Any

from chat.live.engine.runner import runner
from chat.live.protocol import frames
from chat.sockets.feed import Feed

CONVERSATION = 3
MESSAGE = 7
START = {"type": "start", "message_id": MESSAGE, "model": "m", "thinking": False}


class Socket:
    channel_name = "feed-test"

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def send_frame(self, frame: dict[str, Any]) -> None:
        self.sent.append(frame)


def delta(
    start: int, text: str, origin: str = "elsewhere", tokens: int = 1
) -> dict[str, Any]:
    return {
        "type": "chat.delta",
        "origin": origin,
        "message_id": MESSAGE,
        "kind": "content",
        "start": start,
        "text": text,
        "tokens": tokens,
    }


def catchup(content: tuple[int, str]) -> dict[str, Any]:
    return {
        "type": "chat.catchup",
        "origin": "elsewhere",
        "start": START,
        "message_id": MESSAGE,
        "thinking": [0, ""],
        "content": list(content),
    }


async def test_a_feed_joining_mid_answer_asks_for_the_rest_and_sends_it_once():
    socket = Socket()
    feed = Feed(socket, CONVERSATION)
    try:
        await feed.on_delta(delta(5, " world"))  # "hello" is missing here
        assert socket.sent == []
        assert MESSAGE in feed.catchups  # asked the answer's process
        await feed.on_delta(delta(11, "!"))  # held until the catch-up
        assert socket.sent == []

        await feed.on_catchup(catchup((0, "hello world")))
        assert socket.sent == [
            START,
            frames.delta("content", MESSAGE, "hello world"),
            frames.delta("content", MESSAGE, "!"),
        ]
        await feed.on_delta(delta(5, " world!"))  # seen: nothing new
        assert len(socket.sent) == 3
    finally:
        feed.close()


async def test_a_feed_passes_on_how_many_tokens_the_new_text_holds():
    socket = Socket()
    feed = Feed(socket, CONVERSATION)
    try:
        await feed.on_frame(
            {"type": "chat.frame", "origin": "elsewhere", "frames": [START]}
        )
        await feed.on_delta(delta(0, "a b c d", tokens=4))
        await feed.on_delta(delta(4, "c d e f", tokens=4))  # half of it seen
        assert socket.sent == [
            START,
            frames.delta("content", MESSAGE, "a b c d", tokens=4),
            frames.delta("content", MESSAGE, " e f", tokens=2),
        ]
    finally:
        feed.close()


async def test_a_feed_skips_what_its_own_process_sent_it_directly():
    socket = Socket()
    feed = Feed(socket, CONVERSATION)
    await feed.on_delta(delta(0, "hello", origin=runner.id))
    await feed.on_frame({"type": "chat.frame", "origin": runner.id, "frames": [START]})
    assert socket.sent == []
    assert feed.remote == {}


async def test_a_refused_catch_up_is_passed_on_and_the_answer_forgotten():
    socket = Socket()
    feed = Feed(socket, CONVERSATION)
    try:
        frame = {"type": "chat.frame", "origin": "elsewhere", "frames": [START]}
        await feed.on_frame(frame)
        assert MESSAGE in feed.remote
        refusal = frames.error(MESSAGE, "bad_offset", "Past the text.")
        await feed.on_catchup(
            {"type": "chat.catchup", "message_id": MESSAGE, "refused": refusal}
        )
        assert socket.sent == [START, refusal]
        assert feed.remote == {}
    finally:
        feed.close()


async def test_frames_sent_together_reach_the_socket_in_order_each_kept_track_of():
    """An answer's end comes in one event with its stored message
    (`Runner.broadcast`): each frame is passed on in order, and the stored
    message ends the remote answer the start began."""
    socket = Socket()
    feed = Feed(socket, CONVERSATION)
    stored = {"type": "message", "message": {"id": MESSAGE, "status": "done"}}
    done = {"type": "done", "message_id": MESSAGE, "status": "done"}
    try:
        await feed.on_frame(
            {"type": "chat.frame", "origin": "elsewhere", "frames": [START]}
        )
        assert MESSAGE in feed.remote
        await feed.on_frame(
            {"type": "chat.frame", "origin": "elsewhere", "frames": [done, stored]}
        )
        assert socket.sent == [START, done, stored]
        assert feed.remote == {}
    finally:
        feed.close()
