"""The bench's measurements: the calling loop's longest stall during a call,
and the time of calls one after another."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from django.test import override_settings

from chat.tools.calls import Outcome, ToolCall
from chat.tools.mcp import McpTools, Reachable, catalog, offer, thread
from chat.tools.mcp.config import ServerConfig

TICK = 0.001


@dataclass
class Stalled:
    outcome: Outcome
    seconds: float
    longest_gap_ms: float


async def while_ticking(work: Awaitable[Outcome]) -> Stalled:
    """`work`'s outcome, its time, and the longest the loop went without
    running a coroutine that asks to run every millisecond meanwhile."""
    gap = 0.0
    done = False

    async def tick() -> None:
        nonlocal gap
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            gap = max(gap, now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.05)  # ticking
    started = time.perf_counter()
    outcome = await work
    seconds = time.perf_counter() - started
    done = True
    await ticker
    return Stalled(outcome, seconds, gap * 1000)


async def call(tools: McpTools, name: str, **arguments: Any) -> Outcome:
    spec = next(spec for spec in tools.specs if spec.name == name)
    return await tools.run(
        spec, ToolCall("b", name, json.dumps(arguments)), deadline=120
    )


async def stall(config: ServerConfig, *, in_worker: bool, chars: int) -> Stalled:
    """A result of `chars` characters, its message parsed in a worker or
    (the reference) on the MCP thread."""
    large = 1024 * 1024 if in_worker else 1 << 40
    with override_settings(MCP_LARGE_MESSAGE_BYTES=large):
        tools = await offer([Reachable(config, {})])
        await call(tools, f"{config.slug}__huge", chars=10)  # started, warm
        return await while_ticking(call(tools, f"{config.slug}__huge", chars=chars))


async def per_call(config: ServerConfig, *, pooled: bool, calls: int) -> list[float]:
    """The time of each of `calls` calls of `add`, one after another, in ms."""
    with override_settings(MCP_HTTP_POOL_SIZE=4 if pooled else 0):
        catalog.forget()
        tools = await offer([Reachable(config, {})])
        await call(tools, f"{config.slug}__add", a=1, b=1)  # warm
        times = []
        for n in range(calls):
            started = time.perf_counter()
            outcome = await call(tools, f"{config.slug}__add", a=n, b=1)
            times.append((time.perf_counter() - started) * 1000)
            assert outcome.text == str(n + 1), outcome
    await asyncio.to_thread(thread.stop)
    return times
