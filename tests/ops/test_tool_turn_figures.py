"""A tool turn through the engine (the simulator calls the probe's tools,
tests/live/engine/turn/tools_source.py), then its figures: on the throughput
page, the model's time and the tools' apart, a row per tool; in /metrics, the
calls by source and tool, and the answer counted as paused (neither streaming
nor queued) while its tool runs. Marked `smoke`: PostgreSQL and SQLite."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from chat.models import AuditEvent, Message
from chat.ops.metrics import REGISTRY, queue_length
from chat.ops.throughput import Window, summary
from chat.ops.tool_use import per_tool
from tests.support.communicators import connect, frames_until, send
from tests.support.waiting import settled, until

pytestmark = [pytest.mark.smoke, pytest.mark.django_db(transaction=True)]


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def figures() -> tuple[list[dict], list[dict]]:
    now = timezone.now()
    window = Window(start=now - timedelta(hours=1), end=now + timedelta(minutes=1))
    return summary(window), per_tool(window)


async def test_a_tool_turns_figures(alice, conversation, simulator, probe):
    simulator.config.tool_script = [
        [
            {"name": "echo", "arguments": {"text": "hi"}},
            {"name": "broken", "arguments": {"text": "x"}},
        ]
    ]
    calls = ("chatsite_tool_calls_total", "chatsite_tool_call_seconds_count")
    before = {
        "echo": value(calls[0], source="probe", tool="echo", ok="true"),
        "broken": value(calls[0], source="probe", tool="broken", ok="false"),
        "timed": value(calls[1], source="probe", tool="echo"),
    }
    socket = await connect(alice, conversation)
    await send(socket, "Use the tools")
    done = (await frames_until(socket, "done"))[-1]
    await socket.disconnect()
    answer = await settled(done["message_id"])
    assert answer.model_calls == 2 and answer.tool_ms > 0

    async def audited() -> bool:
        return await AuditEvent.objects.filter(kind="tool_call").acount() == 2

    await until(audited, "the calls were not audited")

    [row], tools = await sync_to_async(figures)()
    assert (row["model_tag"], row["answers"]) == (answer.model_tag, 1)
    assert (row["model_calls"], row["tool_answers"]) == (2, 1)
    assert row["tool_s"] == pytest.approx(answer.tool_ms / 1000)
    assert row["model_s"] == pytest.approx((answer.total_ms - answer.tool_ms) / 1000)
    # The model's own rate: both calls' tokens over both calls' decoding.
    assert answer.output_tokens and answer.eval_ms
    assert row["decode_tps_p50"] == pytest.approx(
        answer.output_tokens * 1000 / answer.eval_ms
    )
    steps = {p["name"]: p for p in answer.steps if p["kind"] == "tool"}
    by_tool = {(t["source"], t["tool"]): t for t in tools}
    assert set(by_tool) == {("probe", "broken"), ("probe", "echo")}
    echo, broken = by_tool["probe", "echo"], by_tool["probe", "broken"]
    assert (echo["calls"], echo["failures"]) == (1, 0)
    assert (broken["calls"], broken["failures"]) == (1, 1)
    assert echo["ms_p50"] == pytest.approx(steps["echo"]["ms"])
    assert echo["mean_size"] == steps["echo"]["size"] > 0

    await until(
        lambda: (
            value(calls[0], source="probe", tool="echo", ok="true") > before["echo"]
        ),
        "the call was not counted",
    )
    # The counters are the process's: other tests of this worker counted too.
    after = value(calls[0], source="probe", tool="echo", ok="true")
    assert after == before["echo"] + 1
    assert value(calls[0], source="probe", tool="broken", ok="false") == (
        before["broken"] + 1
    )
    assert value(calls[1], source="probe", tool="echo") == before["timed"] + 1


def gauges(model: str) -> tuple[float, float, float]:
    """Paused, streaming and queued answers, as a scrape says."""
    return (
        value("chatsite_paused_answers", model=model),
        value("chatsite_active_streams", model=model),
        value("chatsite_queue_length"),
    )


async def test_an_answer_running_its_tool_is_paused_not_queued(
    alice, conversation, simulator, probe
):
    socket = await connect(alice, conversation)
    await send(socket, "Use slow now")
    await frames_until(socket, "tool_run")
    await asyncio.wait_for(probe.started.wait(), 10)
    answer = await Message.objects.filter(role="assistant").alast()
    assert answer is not None and answer.status == Message.Status.STREAMING
    # Its ticket gives the slot back (once the tool has run the slot's grace,
    # TOOL_SLOT_GRACE_MS): paused, out of line.
    tag = answer.model_tag

    async def paused() -> bool:
        return await sync_to_async(gauges)(tag) == (1, 0, 0)

    await until(paused, "the answer's ticket paused while its tool runs")
    assert await sync_to_async(queue_length)() == 0
    probe.gate.set()
    await frames_until(socket, "done")
    await socket.disconnect()
    await settled(answer.pk)
    assert await sync_to_async(gauges)(answer.model_tag) == (0, 0, 0)
