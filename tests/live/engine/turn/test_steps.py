"""A turn's steps in memory (`chat.live.engine.turn.steps`), without a server:
the frames a model's tool calls become, the stored parts, and what a socket
that resumes mid-turn is sent (every step it may have missed, in order,
nothing twice)."""

from __future__ import annotations

import asyncio
from typing import Any

from chat.live.engine.generation import Generation
from chat.live.engine.turn.steps import Steps
from chat.models import Message
from chat.tools.calls import Outcome, ToolCall, ToolSpec
from chat.tools.toolbox import Offer, Toolbox
from chat.upstream import Delta, Event, Finished, ToolCallDelta

ECHO = ToolSpec("echo", "test", "echo", "Echo", "Says it back", {"type": "object"})


class Echo:
    async def run(self, spec: ToolSpec, call: ToolCall, *, deadline: float) -> Outcome:
        return Outcome(text=call.arguments)


def tool_turn() -> Generation:
    g = Generation(7, Message(pk=42), "qwen3:4b", True)
    g.steps = Steps(Toolbox.of([Offer("test", "Test", Echo(), [ECHO])]))
    return g


class Sink:
    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    async def send_frame(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)


def first_round(g: Generation) -> list[dict[str, Any]]:
    events: list[Event] = [
        Delta("thinking", "I should echo."),
        Delta("content", "Let me check."),
        ToolCallDelta(0, "call_a", "echo", ""),
        ToolCallDelta(0, arguments='{"text": '),
        ToolCallDelta(0, arguments='"hi"}'),
        ToolCallDelta(1, "", "nowhere", "{}"),
        Finished("tool_calls", output_tokens=10, eval_ms=100.0),
    ]
    return [dict(f) for f in g.apply(events)]


def second_round(g: Generation) -> None:
    assert g.steps is not None and g.finished is not None
    (echo, unknown) = g.steps.this_round()
    g.steps.running(echo, "running")
    g.steps.ran(echo, Outcome(text='{"text": "hi"}', preview="hi"), 12.0)
    g.steps.running(unknown, "running")
    g.steps.ran(unknown, Outcome(text="no such tool", error="unknown_tool"), 1.0)
    g.steps.next_round(g.finished, g.message_id, g.lengths())
    g.finished = None
    g.apply([Delta("thinking", "Got it."), Delta("content", "It said hi.")])
    g.apply([Finished("stop", prompt_tokens=300, output_tokens=5, eval_ms=50.0)])


def test_tool_call_pieces_become_call_and_argument_frames():
    g = tool_turn()
    sent = first_round(g)
    assert [f["type"] for f in sent] == [
        "thinking",
        "content",
        "tool_call",
        "tool_args",
        "tool_args",
        "tool_call",
        "tool_args",
    ]
    assert sent[2] == {
        "type": "tool_call",
        "message_id": 42,
        "call_id": "call_a",
        "name": "echo",
        "title": "Echo",
        "source": "test",
    }
    # A call the server gave no id gets one; an unknown tool has no source.
    assert sent[5]["call_id"] == "call_1_1" and sent[5]["source"] == ""
    assert g.steps is not None
    assert g.steps.this_round()[0].call().arguments == '{"text": "hi"}'


def test_tool_calls_where_none_were_offered_are_ignored():
    g = Generation(7, Message(pk=42), "qwen3:4b", True)
    assert g.apply([ToolCallDelta(0, "x", "echo", "{}"), Delta("content", "a")]) == [
        {"type": "content", "message_id": 42, "delta": "a"}
    ]


def test_the_stored_parts_keep_each_rounds_text_and_calls_in_order():
    g = tool_turn()
    first_round(g)
    second_round(g)
    parts = g.step_parts()
    assert parts is not None
    assert [(p["kind"], p.get("text", p.get("name"))) for p in parts] == [
        ("thinking", "I should echo."),
        ("content", "Let me check."),
        ("tool", '{"text": "hi"}'),
        ("tool", "no such tool"),
        ("thinking", "Got it."),
        ("content", "It said hi."),
    ]
    assert parts[2]["arguments"] == '{"text": "hi"}' and parts[2]["ok"] is True
    assert parts[3]["error"] == "unknown_tool" and parts[3]["ok"] is False
    # Both model calls counted; the prompt is the last call's.
    figures = g.figures()
    assert figures["model_calls"] == 2 and figures["output_tokens"] == 15
    assert figures["eval_ms"] == 150.0 and figures["prompt_tokens"] == 300
    assert figures["tool_ms"] == 13.0


async def test_a_socket_resuming_from_the_start_gets_every_step_in_order():
    g = tool_turn()
    first_round(g)
    second_round(g)
    sink = Sink()
    await g.resume(sink, 0, 0)
    kinds = [f["type"] for f in sink.frames]
    assert kinds == [
        "start",
        "thinking",
        "content",
        "tool_call",
        "tool_args",
        "tool_run",
        "tool_result",
        "tool_call",
        "tool_args",
        "tool_run",
        "tool_result",
        "round",
        "thinking",
        "content",
    ]
    assert sink.frames[4]["delta"] == '{"text": "hi"}'
    assert sink.frames[11]["round"] == 2
    assert sink.frames[12]["delta"] == "Got it." and sink in g.attached


async def test_a_socket_resuming_mid_round_gets_only_what_it_missed():
    g = tool_turn()
    first_round(g)
    second_round(g)
    sink = Sink()
    # It had the second round's thinking in part: the calls before are shown.
    await g.resume(sink, len("Let me check."), len("I should echo.Got"))
    assert [(f["type"], f.get("delta")) for f in sink.frames] == [
        ("start", None),
        ("thinking", " it."),
        ("content", "It said hi."),
    ]


async def test_a_socket_resuming_during_a_run_is_sent_its_progress_once():
    g = tool_turn()
    first_round(g)
    assert g.steps is not None
    echo = g.steps.this_round()[0]
    g.steps.running(echo, "awaiting_approval")
    sink = Sink()
    offsets = g.lengths()
    await g.resume(sink, offsets[1], offsets[0])
    # At its offsets the calls began: sent anew, with their state.
    assert [f["type"] for f in sink.frames] == [
        "start",
        "tool_call",
        "tool_args",
        "tool_run",
        "tool_call",
        "tool_args",
    ]
    assert sink.frames[3]["state"] == "awaiting_approval"


async def test_a_decision_reaches_the_call_awaiting_it_once():
    g = tool_turn()
    first_round(g)
    assert g.steps is not None
    waiting = g.steps.approval("call_a")
    assert g.steps.decide("nope", True) is False
    assert g.steps.decide("call_a", False) is True
    assert await asyncio.wait_for(waiting, 1) is False
    assert g.steps.decide("call_a", True) is False
