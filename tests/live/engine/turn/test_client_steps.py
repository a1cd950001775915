"""An API turn's steps in memory (`Steps.for_client`), without a server: the
client's tools offered as given with its `tool_choice`, the model's calls as
tool frames (the API's sink reads them), the reply's first call only when
the client asks for no parallel calls, and the calls stored as handed over
to the client, not as calls that never ran. The turn through the live server
is tests/api/test_client_tools_e2e.py."""

from __future__ import annotations

from typing import Any

from chat.live.engine.generation import Generation
from chat.live.engine.turn.steps import CLIENT_SOURCE, Steps
from chat.models import ClientTools, Message
from chat.upstream import Delta, Event, Finished, ToolCallDelta

TOOLS = [{"type": "function", "function": {"name": n}} for n in ("weather", "time")]
REQUIRED = {"type": "function", "function": {"name": "time"}}


def api_turn(*, parallel: bool = True) -> Generation:
    g = Generation(7, Message(pk=42), "qwen3:4b", True)
    g.steps = Steps.for_client(ClientTools(TOOLS, REQUIRED, parallel), owner_id=3)
    return g


def reply(g: Generation) -> list[dict[str, Any]]:
    events: list[Event] = [
        Delta("thinking", "Two calls."),
        ToolCallDelta(0, "call_a", "weather", '{"city": '),
        ToolCallDelta(0, arguments='"Oslo"}'),
        ToolCallDelta(1, "call_b", "time", "{}"),
        Finished("tool_calls", output_tokens=10, eval_ms=100.0),
    ]
    return [dict(f) for f in g.apply(events)]


def test_the_clients_tools_are_offered_as_given_with_its_choice():
    steps = api_turn().steps
    assert steps is not None and not steps.runs_tools
    assert steps.offer() == {"tools": TOOLS, "tool_choice": REQUIRED}
    site = Steps.for_client(ClientTools(TOOLS), None)
    assert site.offer() == {"tools": TOOLS, "tool_choice": None}


def test_the_calls_become_tool_frames_and_are_stored_as_handed_over():
    g = api_turn()
    out = reply(g)
    assert [f["type"] for f in out] == [
        "thinking",
        "tool_call",
        "tool_args",
        "tool_args",
        "tool_call",
        "tool_args",
    ]
    assert out[1] == {
        "type": "tool_call",
        "message_id": 42,
        "call_id": "call_a",
        "name": "weather",
        "title": "weather",
        "source": CLIENT_SOURCE,
    }
    assert g.first_token_at is not None
    assert g.steps is not None
    before = g.steps.version
    g.steps.handed_over()
    assert g.steps.version > before  # a checkpoint stores the change
    parts = g.step_parts()
    assert parts is not None
    calls = [p for p in parts if p["kind"] == "tool"]
    assert [(c["id"], c["arguments"]) for c in calls] == [
        ("call_a", '{"city": "Oslo"}'),
        ("call_b", "{}"),
    ]
    for call in calls:
        assert call["ok"] is True and call["error"] is None
        assert call["preview"] == "Sent to the API client, which runs it."
        assert call["text"] == ""
    assert parts[0] == {"kind": "thinking", "text": "Two calls."}
    figures = g.figures()
    assert (figures["model_calls"], figures["tool_ms"]) == (1, 0.0)
    assert figures["done_reason"] == "tool_calls"


def test_no_parallel_calls_keeps_the_first_call_only():
    g = api_turn(parallel=False)
    out = reply(g)
    assert {f.get("call_id") for f in out if f["type"] != "thinking"} == {"call_a"}
    assert g.steps is not None
    assert [s.id for s in g.steps.calls] == ["call_a"]
    assert "".join(g.steps.calls[0].arguments) == '{"city": "Oslo"}'


def test_a_call_cut_before_the_reply_ended_is_stored_as_not_run():
    g = api_turn()
    g.apply([ToolCallDelta(0, "call_a", "weather", '{"ci')])
    # Stopped here: never handed over.
    [call] = [p for p in g.step_parts() or () if p["kind"] == "tool"]
    assert call["ok"] is False and call["error"] == "not run"
