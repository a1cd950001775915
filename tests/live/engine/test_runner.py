"""The runner's edges that the socket tests cannot time on purpose."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import BaseChannelLayer

from chat.live.engine import loop_state
from chat.live.engine.runner import Runner, runner
from chat.models import turn_rows


class Recorder:
    """A socket stand-in that keeps the frames it is sent."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self.ended = asyncio.Event()

    async def send_frame(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)
        if frame["type"] == "message":
            self.ended.set()


class ResumesOnDone(Recorder):
    """Like a second tab that reconnects the moment the first one sees `done`:
    its resume runs while the final frames are still being sent."""

    def __init__(self, late: Recorder, message_id: int, conversation_id: int) -> None:
        super().__init__()
        self.late = late
        self.message_id = message_id
        self.conversation_id = conversation_id

    async def send_frame(self, frame: dict[str, Any]) -> None:
        await super().send_frame(frame)
        if frame["type"] == "done":
            resumed = runner.resume(
                self.late, self.message_id, 0, 0, conversation_id=self.conversation_id
            )
            assert await resumed


@pytest.mark.django_db(transaction=True)
async def test_a_resume_during_the_final_frames_still_gets_the_stored_answer(
    conversation, simulator
):
    turn = await database_sync_to_async(turn_rows.begin_turn)(conversation, "hello")
    late = Recorder()
    first = ResumesOnDone(late, turn.answer.pk, conversation.pk)
    assert runner.claim(conversation.pk)
    runner.subscribe(conversation.pk, first)
    try:
        await runner.start(turn.profile, turn.answer, turn.history)
        await asyncio.wait_for(first.ended.wait(), 10)
        await asyncio.wait_for(late.ended.wait(), 10)
    finally:
        runner.unsubscribe(conversation.pk, first)
    final = late.frames[-1]["message"]
    assert final["status"] == "done"
    assert final["content"] == first.frames[-1]["message"]["content"] != ""
    streamed = "".join(f["delta"] for f in late.frames if f["type"] == "content")
    assert streamed == final["content"]


class StubbornLayer(BaseChannelLayer):
    """A channel layer whose receive, like a blocking Redis read that lost a
    cancellation, goes on waiting until its connections are closed."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = asyncio.Event()
        self.reading = asyncio.Event()

    async def new_channel(self, prefix: str = "specific.") -> str:
        return f"{prefix}test!1"

    async def receive(self, channel: str) -> dict[str, Any]:
        self.reading.set()
        while True:
            try:
                await self.closed.wait()
            except asyncio.CancelledError:
                continue  # lost, as in the read
            raise ConnectionError("Connection closed by server.")

    async def close_pools(self) -> None:
        self.closed.set()


@pytest.mark.django_db(transaction=True)
async def test_shutdown_ends_a_listener_whose_read_lost_its_cancel(monkeypatch):
    layer = StubbornLayer()
    monkeypatch.setattr("chat.live.engine.loop_state.get_channel_layer", lambda: layer)
    own = Runner()
    await own.ensure_started()
    (listener,) = [t for t in loop_state.current().tasks if t.get_name() == "listen"]
    await asyncio.wait_for(layer.reading.wait(), timeout=20)  # in its read
    try:
        await asyncio.wait_for(own.shutdown(), timeout=15)
        assert layer.closed.is_set()
        assert listener.done() and listener.cancelled()
    finally:
        layer.closed.set()  # whatever happened, the loop can end
