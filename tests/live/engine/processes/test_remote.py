"""Requests between processes (`chat.live.engine.processes.remote`) on the in-memory
channel layer:
what a stop or resume request carries, how the owner's listener dispatches them,
and the catch-up it sends the asking socket."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.layers import BaseChannelLayer, InMemoryChannelLayer

from chat.live.engine.generation import Generation
from chat.live.engine.processes import remote
from chat.live.engine.turn.steps import Steps
from chat.models import Message
from chat.tools.calls import Outcome
from chat.tools.toolbox import Toolbox
from chat.upstream import Delta, ToolCallDelta


class Recording(BaseChannelLayer):
    """A layer of several processes (not the in-memory one) that keeps what
    was sent to groups."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.sent.append((group, message))


@pytest.fixture
def memory(monkeypatch) -> InMemoryChannelLayer:
    layer = InMemoryChannelLayer()
    monkeypatch.setattr(
        "chat.live.engine.processes.layer.get_channel_layer", lambda: layer
    )
    return layer


def answer() -> Generation:
    g = Generation(7, Message(pk=42), "qwen3:4b", False)
    g.apply([Delta("thinking", "mull"), Delta("content", "Hello")])
    return g


def tool_turn() -> Generation:
    g = Generation(7, Message(pk=42), "qwen3:4b", True)
    g.steps = Steps(Toolbox.of([]))
    return g


def resume_event(reply_to: str, **offsets: int) -> dict[str, Any]:
    return {
        "type": "generation.resume",
        "conversation_id": 7,
        "message_id": offsets.pop("message_id", 42),
        "thinking_offset": offsets.get("thinking_offset", 0),
        "offset": offsets.get("offset", 0),
        "reply_to": reply_to,
    }


async def test_requests_go_to_the_answers_generation_group(monkeypatch):
    layer = Recording()
    monkeypatch.setattr(
        "chat.live.engine.processes.layer.get_channel_layer", lambda: layer
    )
    await remote.ask_stop(layer, 7)
    await remote.ask_resume(layer, 7, 42, (3, 5), "specific.asker!1")
    assert layer.sent == [
        ("generation.7", {"type": "generation.stop", "conversation_id": 7}),
        (
            "generation.7",
            {
                "type": "generation.resume",
                "conversation_id": 7,
                "message_id": 42,
                "thinking_offset": 3,
                "offset": 5,
                "reply_to": "specific.asker!1",
                "steps_version": 0,
            },
        ),
    ]


async def test_one_process_asks_nobody_else(memory):
    await remote.ask_stop(memory, 7)
    assert memory.groups == {}
    await remote.ask_stop(None, 7)  # no layer at all: nothing to tell


async def test_the_owner_sends_the_text_after_the_offsets(memory):
    asker = await memory.new_channel()
    g = answer()
    g.queue_position = 1
    event = resume_event(asker, thinking_offset=2, offset=1)
    await remote.answer_resume(g, event, "me")
    reply = await memory.receive(asker)
    assert reply == {
        "type": "chat.catchup",
        "origin": "me",
        "start": g.start_frame(),
        "message_id": 42,
        "thinking": (2, "ll"),
        "content": (1, "ello"),
        "queued": {"type": "queued", "message_id": 42, "position": 1},
    }


async def test_a_resume_past_the_text_is_refused(memory):
    asker = await memory.new_channel()
    await remote.answer_resume(answer(), resume_event(asker, offset=9), "me")
    reply = await memory.receive(asker)
    assert reply["type"] == "chat.catchup" and reply["message_id"] == 42
    assert reply["refused"]["code"] == "bad_offset"
    assert "origin" not in reply


async def test_a_resume_for_another_answer_is_ignored(memory):
    asker = await memory.new_channel()
    await remote.answer_resume(answer(), resume_event(asker, message_id=41), "me")
    await remote.answer_resume(None, resume_event(asker), "me")
    assert asker not in memory.channels or memory.channels[asker].empty()


async def test_the_listener_dispatches_stops_and_resumes(memory):
    own = await memory.new_channel()
    stopped: asyncio.Queue[int] = asyncio.Queue()
    resumed: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def resume(event: dict[str, Any]) -> None:
        await resumed.put(event)

    approved: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    listener = asyncio.create_task(
        remote.listen(memory, own, stopped.put_nowait, resume, approved.put_nowait)
    )
    try:
        await memory.send(own, {"type": "something.else"})
        await memory.send(own, {"type": "generation.stop", "conversation_id": 7})
        event = resume_event("specific.asker!1")
        await memory.send(own, event)
        assert await asyncio.wait_for(stopped.get(), 20) == 7
        assert await asyncio.wait_for(resumed.get(), 20) == event
        decision = approval(user_id=3)
        await memory.send(own, decision)
        assert await asyncio.wait_for(approved.get(), 20) == decision
        assert stopped.empty()
    finally:
        listener.cancel()
    with pytest.raises(asyncio.CancelledError):
        await listener


def approval(**fields: Any) -> dict[str, Any]:
    return {
        "type": "generation.approve",
        "conversation_id": 7,
        "message_id": fields.get("message_id", 42),
        "call_id": "c1",
        "allow": fields.get("allow", True),
        "user_id": fields.get("user_id", 3),
    }


def waiting_turn() -> tuple[Generation, asyncio.Future[bool]]:
    """A turn of user 3 whose call `c1` awaits approval."""
    g = tool_turn()
    assert g.steps is not None
    g.steps.owner_id = 3
    return g, g.steps.approval("c1")


async def test_an_approval_from_another_process_reaches_the_call(memory):
    g, decided = waiting_turn()
    await remote.ask_approve(memory, approval(allow=False))  # one process: nobody
    remote.answer_approve(g, approval(allow=False))
    assert decided.done() and decided.result() is False


async def test_only_the_answers_owner_may_approve_and_only_that_answer(memory):
    g, decided = waiting_turn()
    remote.answer_approve(g, approval(user_id=4))
    remote.answer_approve(g, approval(message_id=41))
    remote.answer_approve(None, approval())
    assert not decided.done()
    remote.answer_approve(g, approval())
    assert decided.result() is True
    remote.answer_approve(g, approval(allow=False))  # decided already: left
    assert decided.result() is True


async def test_the_catch_up_of_a_turn_carries_its_steps_in_order(memory):
    g = tool_turn()
    g.apply([Delta("thinking", "mull")])
    g.apply([ToolCallDelta(0, "c1", "echo", '{"a": 1}')])
    assert g.steps is not None
    g.steps.running(g.steps.calls[0], "running")
    asker = await memory.new_channel()
    event = resume_event(asker, thinking_offset=1)
    event["steps_version"] = 0
    await remote.answer_resume(g, event, "me")
    catchup = await asyncio.wait_for(memory.receive(asker), 2)
    assert catchup["thinking"] == (1, "") and catchup["content"] == (0, "")
    assert catchup["steps_version"] == g.steps.version == 2
    items = catchup["steps"]
    assert items[0] == {"kind": "thinking", "start": 1, "text": "ull", "tokens": 1}
    shown = [item["frame"]["type"] for item in items[1:]]
    assert shown == ["tool_call", "tool_args", "tool_run"]
    assert all(item["version"] is None for item in items[1:])


async def test_a_catch_up_sends_again_a_call_changed_since_the_sockets_version(
    memory,
):
    """A call that began before the socket's offsets, whose result the socket
    missed (its step frames lost): sent again, before the text after them."""
    g = tool_turn()
    g.apply([ToolCallDelta(0, "c1", "echo", "{}")])
    assert g.steps is not None
    seen = g.steps.version
    g.steps.ran(g.steps.calls[0], Outcome(text="ok", preview="ok"), 1.0)
    g.apply([Delta("content", "after")])
    asker = await memory.new_channel()
    event = resume_event(asker, offset=2)
    event["steps_version"] = seen
    await remote.answer_resume(g, event, "me")
    items = (await asyncio.wait_for(memory.receive(asker), 2))["steps"]
    kinds = [item["frame"]["type"] if "frame" in item else "text" for item in items]
    assert kinds == ["tool_call", "tool_args", "tool_run", "tool_result", "text"]
    assert items[-1]["text"] == "ter"
    event["steps_version"] = g.steps.version  # had it all: only the text
    await remote.answer_resume(g, event, "me")
    items = (await asyncio.wait_for(memory.receive(asker), 2))["steps"]
    assert [item.get("text") for item in items] == ["ter"]
