from __future__ import annotations

import asyncio

import pytest
from channels.layers import InMemoryChannelLayer

from chat.live.engine.processes import fanout
from chat.live.engine.processes.fanout import (
    COALESCE_SECONDS,
    Pacer,
    Publisher,
    RemoteView,
    spans_processes,
)
from chat.live.protocol import frames, tool_frames
from chat.live.protocol.channel_events import conversation_group


def test_remote_view_drops_overlap_and_reports_gaps():
    view = RemoteView(content=5)
    assert view.take("content", 0, "hello") == ""
    assert view.take("content", 3, "lo world") == " world"
    assert view.take("content", 11, "!") == "!"
    assert view.take("content", 20, "later") is None
    assert view.have == {"thinking": 0, "content": 12}
    assert view.take("thinking", 0, "hmm") == "hmm"


def test_a_merged_frame_says_how_many_tokens_it_holds():
    one = frames.delta("content", 5, "Hel")
    assert "tokens" not in one  # the common frame stays as small as it was
    two = frames.merged(one, frames.delta("content", 5, "lo"))
    assert two == {"type": "content", "message_id": 5, "delta": "Hello", "tokens": 2}
    assert frames.tokens_in(frames.merged(two, one)) == 3


def test_only_real_layers_span_processes():
    assert not spans_processes(None)
    assert not spans_processes(InMemoryChannelLayer())


async def test_publisher_merges_what_arrives_while_it_waits():
    layer = InMemoryChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add(conversation_group(7), channel)
    publisher = Publisher(layer, "me", 7, 42)
    task = asyncio.create_task(publisher.run())
    publisher.add(frames.delta("content", 1, "a"))
    first = await asyncio.wait_for(layer.receive(channel), 2)
    for piece in "bcd":  # arrives during the coalescing pause
        publisher.add(frames.delta("content", 1, piece))
    second = await asyncio.wait_for(layer.receive(channel), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (first["start"], first["text"]) == (0, "a")
    assert (second["start"], second["text"], second["tokens"]) == (1, "bcd", 3)
    assert first["tokens"] == 1
    assert second["origin"] == "me" and second["message_id"] == 42


class HeldLayer(InMemoryChannelLayer):
    """A channel layer whose first group send waits until released, as a send
    to Redis waits for its reply."""

    def __init__(self) -> None:
        super().__init__()
        self.sending = asyncio.Event()
        self.release = asyncio.Event()

    async def group_send(self, group: str, message: dict) -> None:
        if not self.sending.is_set():
            self.sending.set()
            await self.release.wait()
        await super().group_send(group, message)


async def test_a_send_cut_short_by_the_end_of_the_answer_still_arrives_in_order():
    layer = HeldLayer()
    channel = await layer.new_channel()
    await layer.group_add(conversation_group(7), channel)
    publisher = Publisher(layer, "me", 7, 42)
    pump = asyncio.create_task(publisher.run())
    publisher.add(frames.delta("content", 1, "Hello"))
    await layer.sending.wait()
    # The answer ends: the relay cancels the pump in the middle of its send,
    # then the final flush sends the rest.
    pump.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pump
    publisher.add(frames.delta("content", 1, " world"))
    final = asyncio.create_task(publisher.flush())
    layer.release.set()
    await final
    first = await asyncio.wait_for(layer.receive(channel), 2)
    second = await asyncio.wait_for(layer.receive(channel), 2)
    assert (first["start"], first["text"]) == (0, "Hello")
    assert (second["start"], second["text"]) == (5, " world")


async def test_pacer_merges_text_and_keeps_order_with_other_frames():
    sent: list[dict] = []

    async def send(frame: dict) -> None:
        sent.append(frame)

    pacer = Pacer(send)
    for piece in ("Hel", "lo", " there"):
        pacer.delta(frames.delta("content", 5, piece))
    pacer.delta(frames.delta("thinking", 5, "hmm"))
    pacer.delta(frames.delta("content", 5, "!"))
    assert sent == []  # adding never writes
    await pacer.frame({"type": "done", "message_id": 5})
    assert sent == [
        frames.delta("content", 5, "Hello there", tokens=3),
        frames.delta("thinking", 5, "hmm"),
        frames.delta("content", 5, "!"),
        {"type": "done", "message_id": 5},
    ]
    pacer.close()


async def test_pacer_writes_at_once_when_idle_then_at_most_every_interval():
    sent: list[tuple[float, dict]] = []
    loop = asyncio.get_running_loop()
    second = asyncio.Event()

    async def send(frame: dict) -> None:
        sent.append((loop.time(), frame))
        if len(sent) == 2:
            second.set()

    pacer = Pacer(send)
    pacer.delta(frames.delta("content", 1, "a"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert [f["delta"] for _, f in sent] == ["a"]  # no wait for the first
    for piece in "bcdef":  # while the pacer rests after "a"
        pacer.delta(frames.delta("content", 1, piece))
    await asyncio.wait_for(second.wait(), timeout=5)
    pacer.close()
    assert [f["delta"] for _, f in sent] == ["a", "bcdef"]
    assert sent[1][0] - sent[0][0] >= COALESCE_SECONDS * 0.99


async def test_a_rested_pacer_writes_behind_the_next_token(monkeypatch):
    # Not when its rest ends (`Pacer`): the next token's arrival is what writes.
    monkeypatch.setattr(fanout, "BEHIND_SECONDS", 3600)
    sent: list[dict] = []
    second = asyncio.Event()

    async def send(frame: dict) -> None:
        sent.append(frame)
        if len(sent) == 2:
            second.set()

    pacer = Pacer(send)
    pacer.delta(frames.delta("content", 1, "a"))
    pacer.delta(frames.delta("content", 1, "b"))  # before the first write: merged
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert [f["delta"] for f in sent] == ["ab"]
    pacer.delta(frames.delta("content", 1, "c"))  # during the rest
    # The pacer's rest ends before this sleep does: it waits for a token then.
    await asyncio.sleep(COALESCE_SECONDS * 2)
    assert [f["delta"] for f in sent] == ["ab"]
    pacer.delta(frames.delta("content", 1, "d"))
    await asyncio.wait_for(second.wait(), timeout=5)
    assert [f["delta"] for f in sent] == ["ab", "cd"]
    pacer.close()


async def test_publisher_sends_a_tool_frame_whole_after_the_text_before_it():
    # An API answer's call (a client's own tool) as a socket's: the frame is
    # not text, and goes out as it is, in order.
    layer = InMemoryChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add(conversation_group(7), channel)
    publisher = Publisher(layer, "me", 7, 42)
    call = tool_frames.tool_call(42, "call_a", "get_weather", "get_weather", "client")
    args = tool_frames.tool_args(42, "call_a", '{"city": "Oslo"}')
    publisher.add(frames.delta("thinking", 42, "I will look."))
    publisher.add(call)
    publisher.add(args)
    await publisher.flush()
    text = await asyncio.wait_for(layer.receive(channel), 2)
    steps = await asyncio.wait_for(layer.receive(channel), 2)
    assert (text["type"], text["text"]) == ("chat.delta", "I will look.")
    assert steps == {"type": "chat.frame", "origin": "me", "frames": [call, args]}
