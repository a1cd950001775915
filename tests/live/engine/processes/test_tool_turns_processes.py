"""A turn with tools seen from another process: two real Daphne processes on
PostgreSQL and Redis, the simulator calling the probe's tools
(`tool_daphnes.py`). A second tab on the other process sees every step live,
in the order the owner's tab sees it (text never ahead of a step), gets the
steps so far when it reconnects mid-turn, and may answer an approval."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest
from asgiref.sync import sync_to_async

from chat.models import Message
from tests.live.engine.turn.tools_source import SOURCE
from tests.support.services.daphnes import (
    Daphne,
    daphne_env,
    frames_until,
    open_socket,
    send,
    start_all,
    until_joined,
)
from tests.support.threads import in_thread

pytestmark = [pytest.mark.django_db(transaction=True)]

STEPS = {"tool_call", "tool_args", "tool_run", "tool_result", "round"}
TEXT = {"thinking", "content"}


@pytest.fixture(scope="module")
def _tool_daphne_pair(test_mode, tmp_path_factory, django_db_setup, _simulator_server):
    if test_mode == "sqlite":
        pytest.skip("several processes need PostgreSQL and Redis")
    env = daphne_env()
    env["DJANGO_SETTINGS_MODULE"] = "tests.live.engine.processes.tool_settings"
    logs = tmp_path_factory.mktemp("tool-daphnes")
    servers = [Daphne(env, logs / f"daphne-{i}.log") for i in range(2)]
    yield servers
    for server in servers:
        try:
            server.stop()
        except subprocess.TimeoutExpired:  # a loaded machine's slow shutdown
            server.stop(signal.SIGKILL)


@pytest.fixture
def daphnes(_tool_daphne_pair, simulator):
    start_all([server for server in _tool_daphne_pair if not server.running])
    return _tool_daphne_pair


@pytest.fixture
def tooled(conversation):
    conversation.tool_choices = {"sources": {SOURCE: True}}
    conversation.save(update_fields=["tool_choices"])
    return conversation


def steps_with_text_before(frames: list[dict]) -> list[tuple]:
    """Each step frame (its type, call and state) with how much text of each
    kind came before it: the same on every tab when nothing overtook."""
    had = {"thinking": 0, "content": 0}
    out = []
    for frame in frames:
        if frame["type"] in TEXT:
            had[frame["type"]] += len(frame["delta"])
        elif frame["type"] in STEPS:
            key = frame.get("call_id", frame.get("round"))
            out.append((frame["type"], key, frame.get("state"), dict(had)))
    return out


async def answered(ws) -> list[dict]:
    """The frames until the stored answer (the question's echo is a message
    too)."""
    seen: list[dict] = []
    while True:
        seen += await frames_until(ws, "message", timeout=60)
        if seen[-1]["message"]["role"] == "assistant":
            return seen


def arguments(frames: list[dict], call_id: str) -> str:
    return "".join(
        f["delta"]
        for f in frames
        if f["type"] == "tool_args" and f["call_id"] == call_id
    )


async def tabs(daphnes, conversation, alice, session_cookie):
    """The owner's tab on process 0 and another of the same user on process 1,
    both in the conversation's group."""
    cookie = await in_thread(session_cookie, alice)
    other = await open_socket(daphnes[1], conversation, cookie)
    owner = await open_socket(daphnes[0], conversation, cookie)
    await until_joined(conversation, 2)
    return cookie, owner, other


async def test_a_tab_on_another_process_sees_every_step_in_order(
    daphnes, tooled, alice, session_cookie, simulator
):
    simulator.config.tps = 200
    simulator.config.tool_format = "parser"
    _, owner, other = await tabs(daphnes, tooled, alice, session_cookie)
    await send(owner, "Please use echo to say hi, then echo again")
    mine = await answered(owner)
    theirs = await answered(other)
    await owner.close()
    await other.close()
    start = next(i for i, f in enumerate(theirs) if f["type"] == "start")
    theirs = theirs[start:]
    assert mine[-1]["message"]["status"] == "done", mine[-1]
    assert steps_with_text_before(theirs) == steps_with_text_before(mine)
    assert [f["type"] for f in theirs if f["type"] in STEPS] == [
        f["type"] for f in mine if f["type"] in STEPS
    ]
    calls = [f["call_id"] for f in mine if f["type"] == "tool_call"]
    assert calls and all(arguments(theirs, c) == arguments(mine, c) for c in calls)
    for kind in TEXT:
        assert "".join(f["delta"] for f in theirs if f["type"] == kind) == "".join(
            f["delta"] for f in mine if f["type"] == kind
        )


async def test_a_tab_that_reconnects_on_another_process_gets_the_steps_so_far(
    daphnes, tooled, alice, session_cookie, simulator
):
    simulator.config.tps = 200
    cookie, owner, other = await tabs(daphnes, tooled, alice, session_cookie)
    await send(owner, "Use echo to say hi, then use guarded to say bye")
    seen = await frames_until(owner, "tool_run", timeout=60)
    while seen[-1].get("state") != "awaiting_approval":
        seen += await frames_until(owner, "tool_run", timeout=60)
    waiting = seen[-1]
    live = await frames_until(other, "tool_run", timeout=60)
    while live[-1].get("state") != "awaiting_approval":
        live += await frames_until(other, "tool_run", timeout=60)
    start = next(i for i, f in enumerate(live) if f["type"] == "start")
    assert steps_with_text_before(live[start:]) == steps_with_text_before(seen)
    await other.close()

    # Reloaded mid-turn: the page resumes from the start of the answer.
    again = await open_socket(daphnes[1], tooled, cookie)
    message_id = waiting["message_id"]
    await again.send(
        json.dumps({"type": "resume", "message_id": message_id, "offset": 0})
    )
    caught = await frames_until(again, "tool_run", timeout=60)
    while caught[-1].get("state") != "awaiting_approval":
        caught += await frames_until(again, "tool_run", timeout=60)
    assert caught[0]["type"] == "start"
    replayed = [s[:3] for s in steps_with_text_before(caught) if s[0] != "tool_args"]
    shown = [s[:3] for s in steps_with_text_before(seen) if s[0] != "tool_args"]
    # Every call once, with its last state, in order (not each state it had).
    assert [s[:2] for s in replayed if s[0] == "tool_call"] == [
        s[:2] for s in shown if s[0] == "tool_call"
    ]
    assert replayed[-1] == ("tool_run", waiting["call_id"], "awaiting_approval")
    done = [s[1] for s in shown if s[0] == "tool_call" and s[1] != waiting["call_id"]]
    assert done and all(("tool_result", call, None) in replayed for call in done)
    for call in {f["call_id"] for f in seen if f["type"] == "tool_call"}:
        assert arguments(caught, call) == arguments(seen, call)

    # Approved from the reloaded tab, on the process that does not run it.
    await again.send(
        json.dumps(
            {
                "type": "approve",
                "message_id": message_id,
                "call_id": waiting["call_id"],
                "allow": True,
            }
        )
    )
    rest = await answered(owner)
    after = await answered(again)
    await owner.close()
    await again.close()
    ran = [f for f in rest if f["type"] == "tool_run"]
    assert [r["state"] for r in ran] == ["running"]
    result = next(f for f in rest if f["type"] == "tool_result")
    assert result["call_id"] == waiting["call_id"] and result["ok"] is True
    assert [f["type"] for f in after if f["type"] in STEPS] == [
        f["type"] for f in rest if f["type"] in STEPS
    ]
    stored = await sync_to_async(Message.objects.get)(pk=message_id)
    assert stored.status == "done"
    tools = [p for p in stored.steps if p["kind"] == "tool"]
    assert [t["name"] for t in tools] == ["echo", "guarded"]
    assert all(t["ok"] for t in tools)
