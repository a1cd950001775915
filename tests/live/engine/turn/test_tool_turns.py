"""Turns with tools through the owner's socket, end to end: the simulator
calls the probe's tools (tools_source.py), the engine runs them and asks
again. Every step streams and is stored; Stop cancels a running call; a
second socket resumes mid-turn; the round limit; a tool that fails; an
approval declined; the slot lent to another user while a tool runs."""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async

from chat.models import AuditEvent, Message
from tests.live.engine.admission.queueing import on_database
from tests.support.communicators import answer_of, connect, frames_until, send, text_of
from tests.support.waiting import settled, until

pytestmark = on_database


def types(frames: list[dict]) -> list[str]:
    return [f["type"] for f in frames]


def tool_messages(simulator) -> list[list[dict]]:
    """The `tool` messages each model request carried."""
    return [
        [m for m in entry.body["messages"] if m["role"] == "tool"]
        for entry in simulator.asked
    ]


async def test_a_turn_runs_the_tool_and_answers_from_its_result(
    alice, conversation, simulator, probe
):
    socket = await connect(alice, conversation)
    await send(socket, "Please use echo to say hi")
    frames = await frames_until(socket, "done")
    await socket.disconnect()
    kinds = types(frames)
    steps = ["tool_call", "tool_args", "tool_run", "tool_result", "round"]
    assert [k for k in kinds if k in steps and k != "tool_args"] == [
        "tool_call",
        "tool_run",
        "tool_result",
        "round",
    ]
    assert kinds.index("tool_call") < kinds.index("tool_args") < kinds.index("tool_run")
    result = frames[kinds.index("tool_result")]
    assert result["ok"] is True and result["preview"] == "probe says"
    assert frames[kinds.index("round")]["round"] == 2
    assert frames[-1]["status"] == "done"

    answer = await answer_of(conversation)
    assert answer.model_calls == 2 and answer.tool_ms is not None
    tool = next(p for p in answer.steps if p["kind"] == "tool")
    assert tool["name"] == "echo" and tool["text"].startswith("probe says {")
    assert answer.content == text_of(frames, "content")
    assert "probe says" in answer.content  # the simulator quotes the result
    # The model got the call and its result back, in the OpenAI shape.
    first, second = simulator.asked
    assert [t["function"]["name"] for t in first.body["tools"]][:1] == ["echo"]
    assert tool_messages(simulator)[1][0]["content"] == tool["text"]
    audited = await until(
        lambda: AuditEvent.objects.filter(kind="tool_call").first(), "no audit"
    )
    assert audited.actor_id == alice.pk and audited.detail["tool"] == "echo"
    assert len(audited.detail["arguments_sha256"]) == 64
    assert audited.detail["outcome"] == "ok"


async def test_stop_during_a_tool_run_cancels_it_and_keeps_the_steps(
    alice, conversation, simulator, probe
):
    socket = await connect(alice, conversation)
    await send(socket, "Use slow now")
    await frames_until(socket, "tool_run")
    await asyncio.wait_for(probe.started.wait(), 10)
    await socket.send_json_to({"type": "stop"})
    done = (await frames_until(socket, "done"))[-1]
    await socket.disconnect()
    assert done["status"] == "stopped" and probe.cancelled
    answer = await settled(done["message_id"])
    tool = next(p for p in answer.steps if p["kind"] == "tool")
    assert tool["error"] == "stopped" and tool["name"] == "slow"
    assert len(simulator.asked) == 1  # no model call after the stop


async def test_a_second_socket_resumes_mid_turn_at_its_step(
    alice, conversation, simulator, probe
):
    first = await connect(alice, conversation)
    await send(first, "Use slow now")
    before = await frames_until(first, "tool_run")
    message_id = before[-1]["message_id"]
    second = await connect(alice, conversation)
    await second.send_json_to(
        {"type": "resume", "message_id": message_id, "offset": 0, "thinking_offset": 0}
    )
    caught = await frames_until(second, "tool_run")
    assert [k for k in types(caught) if k != "tool_args"] == [
        "start",
        *(["thinking"] if text_of(before, "thinking") else []),
        *(["content"] if text_of(before, "content") else []),
        "tool_call",
        "tool_run",
    ]
    assert text_of(caught, "tool_args") == text_of(before, "tool_args")
    probe.gate.set()
    rest = await frames_until(second, "done")
    await frames_until(first, "done")
    await first.disconnect()
    await second.disconnect()
    assert types(rest)[:2] == ["tool_result", "round"]
    answer = await Message.objects.aget(pk=message_id)
    assert text_of(caught + rest, "content") == answer.content


async def test_the_round_limit_asks_once_more_without_tools_and_says_so(
    alice, conversation, simulator, probe, settings
):
    settings.TOOLS_MAX_ROUNDS = 2
    simulator.config.tool_script = [[{"name": "echo", "arguments": {"text": "x"}}]]
    simulator.config.tool_loop = True
    socket = await connect(alice, conversation)
    await send(socket, "Loop forever")
    frames = await frames_until(socket, "done")
    await socket.disconnect()
    errors = [f for f in frames if f["type"] == "error"]
    assert [e["code"] for e in errors] == ["tool_rounds"]
    assert "2 times" in errors[0]["detail"]
    assert frames[-1]["status"] == "done"
    assert [bool(entry.body.get("tools")) for entry in simulator.asked] == [
        True,
        True,
        False,
    ]
    answer = await answer_of(conversation)
    assert answer.model_calls == 3 and answer.error_code == "tool_rounds"


async def test_a_tool_that_fails_and_an_unknown_tool_are_the_models_to_handle(
    alice, conversation, simulator, probe
):
    simulator.config.tool_script = [
        [
            {"name": "broken", "arguments": {"text": "x"}},
            {"name": "nowhere", "arguments": {}},
        ]
    ]
    socket = await connect(alice, conversation)
    await send(socket, "Try these")
    frames = await frames_until(socket, "done")
    await socket.disconnect()
    results = [f for f in frames if f["type"] == "tool_result"]
    assert [(r["ok"], r["error"]) for r in results] == [
        (False, "broken"),
        (False, "unknown_tool"),
    ]
    assert frames[-1]["status"] == "done"
    told = [m["content"] for m in tool_messages(simulator)[1]]
    assert told[0] == "Error: the probe is broken."
    assert told[1].startswith("Error: there is no tool named 'nowhere'")
    assert "echo" in told[1]


async def test_a_declined_call_tells_the_model_the_user_declined(
    alice, conversation, simulator, probe
):
    socket = await connect(alice, conversation)
    await send(socket, "Use guarded please")
    waiting = (await frames_until(socket, "tool_run"))[-1]
    assert waiting["state"] == "awaiting_approval"
    await socket.send_json_to(
        {
            "type": "approve",
            "message_id": waiting["message_id"],
            "call_id": waiting["call_id"],
            "allow": False,
        }
    )
    frames = await frames_until(socket, "done")
    await socket.disconnect()
    result = next(f for f in frames if f["type"] == "tool_result")
    assert result["error"] == "declined" and not probe.ran
    assert tool_messages(simulator)[1][0]["content"] == "The user declined this call."


async def test_a_running_tool_lends_its_slot_to_another_users_question(
    alice, bob, conversation, simulator, probe, limits, conversations, settings
):
    settings.TOOL_SLOT_GRACE_MS = 0  # lent at once (test_slot_grace.py: after it)
    await sync_to_async(limits)(0, 1)
    [theirs] = await sync_to_async(conversations)(bob)
    mine = await connect(alice, conversation)
    await send(mine, "Use slow now")
    await frames_until(mine, "tool_run")
    await asyncio.wait_for(probe.started.wait(), 10)
    other = await connect(bob, theirs)
    await send(other, "Hello there")
    answered = await frames_until(other, "done")
    assert "queued" not in types(answered) and answered[-1]["status"] == "done"
    assert not probe.gate.is_set()  # answered while the tool still ran
    probe.gate.set()
    rest = await frames_until(mine, "done")
    await mine.disconnect()
    await other.disconnect()
    assert rest[-1]["status"] == "done" and "round" in types(rest)


async def test_an_allowed_call_runs(alice, conversation, simulator, probe):
    socket = await connect(alice, conversation)
    await send(socket, "Use guarded please")
    waiting = (await frames_until(socket, "tool_run"))[-1]
    await socket.send_json_to(
        {
            "type": "approve",
            "message_id": waiting["message_id"],
            "call_id": waiting["call_id"],
            "allow": True,
        }
    )
    frames = await frames_until(socket, "done")
    await socket.disconnect()
    running = [f for f in frames if f["type"] == "tool_run"]
    assert [r["state"] for r in running] == ["running"]
    assert [c.name for c in probe.ran] == ["guarded"]
