"""The relay bench's runs: one scenario's questions asked through chatsite and
of the simulator directly, in the same run, into one row of figures; and the
ramp, more and more streams until the added latency passes its limit."""

from __future__ import annotations

import asyncio
import gc
import math
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bench.common import (
    StreamResult,
    answer_text,
    cpu_seconds,
    percentile,
    rss_mib,
    token_ends,
)
from bench.relay import api
from bench.relay.clients import direct, reader_session, through_floor, with_viewers
from bench.relay.site import Site


@dataclass
class Scenario:
    name: str
    streams: int
    tps: float
    tokens: int
    viewers: int = 0  # signed-out sockets of one live shared link per stream
    # How the answers are read: "ws" (the conversation's WebSocket), over the
    # API, "sse" (/v1/chat/completions) or "ndjson" (/api/chat), or "floor":
    # the bare relay of bench/floor.py instead of chatsite, the reference for
    # the server's CPU per token (its row's cpu/1k is the bare relay's).
    via: str = "ws"
    nginx: bool = False  # the socket through nginx running deploy/nginx.conf


def latencies(results: list[StreamResult], log: list[dict[str, Any]]) -> list[float]:
    """Per token: arrival minus the simulator's send stamp, in ms. Each stream's log
    entry is the one whose last message is the stream's question (not the order of
    start: chatsite may send 100 simultaneous questions on in another order)."""
    entries = {entry["body"]["messages"][-1]["content"]: entry for entry in log}
    out: list[float] = []
    for result in results:
        entry = entries.get(result.key)
        if entry is None:
            continue
        for arrived, sent in zip(result.arrivals, entry["times"], strict=False):
            out.append((arrived - sent) * 1000)
    return out


@contextmanager
def gc_paused() -> Iterator[None]:
    """No garbage collection in the load client while it records arrivals.

    A full collection of the client's heap (tens of thousands of recorded chunks)
    stalls its loop for ~100 ms, which would be counted as chatsite's latency.
    """
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def client_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


async def run_scenario(site: Site, scenario: Scenario) -> dict[str, Any]:
    ends = token_ends(scenario.tokens)
    site.configure(
        tps=scenario.tps,
        answer_tokens=scenario.tokens,
        answer_text=answer_text(scenario.tokens),
        ttft_ms=0,
    )
    async with reader_session() as session:
        with gc_paused():
            baseline = await asyncio.gather(
                *(direct(site, ends, session, i) for i in range(scenario.streams))
            )
    base_lat = latencies(list(baseline), site.sim_log())

    via_socket = scenario.via == "ws"
    conversations = site.new_conversations(scenario.streams) if via_socket else []
    if scenario.via == "floor" and site.floor is None:
        site.start_floor()
    tokens_of = site.live_links(conversations) if scenario.viewers else []
    site.configure(
        tps=scenario.tps,
        answer_tokens=scenario.tokens,
        answer_text=answer_text(scenario.tokens),
        ttft_ms=0,
    )
    floor = site.floor if scenario.via == "floor" else None
    servers = [floor.pid] if floor is not None else site.server_pids
    cpu_before = sum(map(cpu_seconds, servers))
    sim_before = cpu_seconds(site.sim_pid)
    client_before = client_cpu_seconds()
    began = time.monotonic()
    with gc_paused():
        if via_socket:
            relayed = await asyncio.gather(
                *(
                    with_viewers(
                        site,
                        pk,
                        tokens_of[i] if tokens_of else None,
                        scenario.viewers,
                        ends,
                        site.nginx.port if scenario.nginx else None,
                    )
                    for i, pk in enumerate(conversations)
                )
            )
        elif scenario.via == "floor":
            relayed = await asyncio.gather(
                *(through_floor(site, i, ends) for i in range(scenario.streams))
            )
        else:
            async with reader_session() as session:
                relayed = await asyncio.gather(
                    *(
                        api.through_api(
                            site.web_url,
                            site.api_key,
                            scenario.via,
                            f"bench api {i}",
                            ends,
                            session,
                        )
                        for i in range(scenario.streams)
                    )
                )
    elapsed = time.monotonic() - began
    cpu_used = sum(map(cpu_seconds, servers)) - cpu_before
    sim_used = cpu_seconds(site.sim_pid) - sim_before
    client_used = client_cpu_seconds() - client_before
    log = site.sim_log()
    relay_lat = latencies(list(relayed), log)
    tokens = sum(len(r.arrivals) for r in relayed)

    def ttft(results: list[StreamResult]) -> float:
        firsts = [(r.first_token - r.started) * 1000 for r in results if r.first_token]
        return statistics.median(firsts) if firsts else math.nan

    row: dict[str, Any] = {"scenario": scenario.name, "tokens": tokens}
    for q, label in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99"), (1.0, "max")):
        row[f"direct_{label}_ms"] = percentile(base_lat, q)
        row[f"relay_{label}_ms"] = percentile(relay_lat, q)
        row[f"added_{label}_ms"] = row[f"relay_{label}_ms"] - row[f"direct_{label}_ms"]
    row["ttft_added_ms"] = ttft(list(relayed)) - ttft(list(baseline))
    row["frames_per_token"] = sum(r.frames for r in relayed) / max(tokens, 1)
    if scenario.viewers:
        row["viewers"] = scenario.viewers * scenario.streams
        row["viewer_frames_per_token"] = sum(r.viewer_frames for r in relayed) / max(
            tokens * scenario.viewers, 1
        )
    row["cpu_s_per_1k_tokens"] = cpu_used / max(tokens, 1) * 1000
    # The simulator and this load client share the machine with Daphne.
    row["sim_cpu_s_per_1k_tokens"] = sim_used / max(tokens, 1) * 1000
    row["client_cpu_s_per_1k_tokens"] = client_used / max(tokens, 1) * 1000
    row["daphne_rss_mib"] = sum(map(rss_mib, servers))
    row["offered_tps"] = scenario.streams * scenario.tps
    row["delivered_tps"] = tokens / elapsed
    # Admission (no limits here): the time from the question to the upstream request.
    waits = [r.queue_wait_ms for r in relayed if r.queue_wait_ms is not None]
    row["queue_wait_p50_ms"] = percentile(waits, 0.5)
    row["queue_wait_max_ms"] = percentile(waits, 1.0)
    row["refused"] = sum(r.refused for r in relayed)
    row["complete"] = tokens == scenario.streams * scenario.tokens
    return row


# The ramp: more and more 40 tok/s streams until the added latency's p99 passes
# RAMP_LIMIT_MS; the aggregate tok/s there is the relay's capacity on this machine.
RAMP_TPS = 40.0
RAMP_TOKENS = 120
RAMP_LIMIT_MS = 50.0


def ramp_scenario(streams: int) -> Scenario:
    name = f"ramp {streams} @ {RAMP_TPS:g} tok/s"
    return Scenario(name, streams=streams, tps=RAMP_TPS, tokens=RAMP_TOKENS)


async def run_ramp(
    site: Site, start: int = 10, most: int = 640, refine: int = 2
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Double the streams from `start` until the added p99 passes the limit, then
    halve the gap between the last step under it and the first over it `refine`
    times. Returns the rows, by streams, and where the p99 passed the limit (the
    highest step under it and the lowest over it)."""
    rows: list[dict[str, Any]] = []

    async def step(streams: int) -> bool:
        row = await run_scenario(site, ramp_scenario(streams))
        row["streams"] = streams
        rows.append(row)
        # Sockets refused at their handshake: the process is past what it carries.
        return bool(row["added_p99_ms"] > RAMP_LIMIT_MS or row["refused"])

    low, high, streams = 0, 0, start
    while streams <= most:
        if await step(streams):
            high = streams
            break
        low, streams = streams, streams * 2
    for _ in range(refine if low and high else 0):
        middle = (low + high) // 2
        if middle in (low, high):
            break
        if await step(middle):
            high = middle
        else:
            low = middle
    rows.sort(key=lambda r: r["streams"])
    under = [r for r in rows if r["streams"] <= low and low]
    over = [r for r in rows if r["streams"] >= high and high]
    summary = {
        "limit_p99_ms": RAMP_LIMIT_MS,
        "last_under": under[-1]["scenario"] if under else None,
        "last_under_offered_tps": under[-1]["offered_tps"] if under else None,
        "last_under_delivered_tps": under[-1]["delivered_tps"] if under else None,
        "first_over": over[0]["scenario"] if over else None,  # the lowest
        "first_over_offered_tps": over[0]["offered_tps"] if over else None,
        "first_over_delivered_tps": over[0]["delivered_tps"] if over else None,
    }
    return rows, summary
