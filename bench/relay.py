"""Relay latency: what chatsite adds between the model server and the socket.

The simulator stamps each token's send time (wall clock, right after the write).
Clients record when each token's text arrives, once through chatsite's WebSocket
and once reading the simulator directly (the baseline). Both run in the same
process, in the same run, so "added" is a difference measured under equal load.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import websockets
from websockets.exceptions import InvalidHandshake

from bench import api
from bench.common import (
    StreamResult,
    answer_text,
    assign_arrivals,
    percentile,
    token_ends,
)
from bench.procfs import client_cpu_seconds, cpu_seconds, rss_mib
from bench.site import Site


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


async def through_chatsite(
    site: Site, conversation_id: int, ends: list[int], port: int | None = None
) -> StreamResult:
    """The answer over the conversation's socket, on Daphne's port or `port`
    (nginx's)."""
    result = StreamResult(key=f"bench conversation {conversation_id}")
    port = port or site.web_port
    url = f"ws://127.0.0.1:{port}/ws/conversations/{conversation_id}/"
    headers = {"Cookie": site.cookie, "Origin": f"http://127.0.0.1:{port}"}
    try:
        socket = await websockets.connect(
            url, additional_headers=headers, max_size=None
        )
    except (InvalidHandshake, OSError):
        result.refused = True
        return result
    async with socket as ws:
        result.started = time.time()
        await ws.send(
            json.dumps({"type": "send", "content": result.key, "client_id": "b"})
        )
        end = await read_answer(ws, result, ends)
    result.queue_wait_ms = (end.get("stats") or {}).get("queue_wait_ms")
    return result


async def read_answer(ws: Any, result: StreamResult, ends: list[int]) -> dict[str, Any]:
    """The answer's content frames, into `result`, up to its last frame ("done"
    or "error"), which is returned. Cancelled, what arrived is in `result`."""
    chunks: list[tuple[float, int]] = []
    received = 0
    end: dict[str, Any] = {}
    try:
        async for raw in ws:
            now = time.time()
            frame = json.loads(raw)
            if frame["type"] == "content":
                received += len(frame["delta"])
                chunks.append((now, received))
                result.frames += 1
                if result.first_token is None:
                    result.first_token = now
            elif frame["type"] in ("done", "error"):
                end = frame
                break
    finally:
        result.arrivals = assign_arrivals(ends, chunks)
    return end


async def through_floor(site: Site, number: int, ends: list[int]) -> StreamResult:
    """The same answer through the bare relay (bench/floor.py)."""
    result = StreamResult(key=f"bench floor {number}")
    url = f"ws://127.0.0.1:{site.floor_port}/ws"
    async with websockets.connect(url, max_size=None) as ws:
        result.started = time.time()
        await ws.send(json.dumps({"text": result.key}))
        await read_answer(ws, result, ends)
    return result


async def watch_link(site: Site, token: str, opened: asyncio.Event) -> int:
    """A link viewer: its content frames until the answer is done."""
    url = f"ws://127.0.0.1:{site.web_port}/ws/share/{token}/"
    headers = {"Origin": f"http://127.0.0.1:{site.web_port}"}
    frames = 0
    async with websockets.connect(url, additional_headers=headers, max_size=None) as ws:
        opened.set()
        async for raw in ws:
            kind = json.loads(raw)["type"]
            if kind == "content":
                frames += 1
            elif kind in ("done", "error"):
                break
    return frames


async def with_viewers(
    site: Site,
    conversation_id: int,
    token: str | None,
    count: int,
    ends: list[int],
    port: int | None = None,
) -> StreamResult:
    """The owner's stream, with `count` viewers of a live link watching it (a
    share socket subscribes before its handshake ends: once open, it hears all)."""
    viewers: list[asyncio.Task[int]] = []
    for _ in range(count if token else 0):
        opened = asyncio.Event()
        viewers.append(asyncio.create_task(watch_link(site, token or "", opened)))
        await opened.wait()
    result = await through_chatsite(site, conversation_id, ends, port)
    result.viewer_frames = sum(await asyncio.gather(*viewers))
    return result


async def direct(
    site: Site, ends: list[int], session: aiohttp.ClientSession, number: int
) -> StreamResult:
    result = StreamResult(key=f"bench direct {number}")
    chunks: list[tuple[float, int]] = []
    question = {"role": "user", "content": result.key}
    body: dict[str, Any] = {"model": "llama-demo:3b", "messages": [question]}
    url, text_of = f"{site.sim_url}/api/chat", _ollama_text
    if site.backend == "openai":
        body["stream"] = True
        url, text_of = f"{site.sim_url}/v1/chat/completions", _openai_text
    received = 0
    buffer = b""
    result.started = time.time()
    async with session.post(url, json=body) as response:
        async for data in response.content.iter_any():
            now = time.time()
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                text = text_of(line)
                if text:
                    received += len(text)
                    chunks.append((now, received))
                    result.frames += 1
                    if result.first_token is None:
                        result.first_token = now
    result.arrivals = assign_arrivals(ends, chunks)
    return result


def _ollama_text(line: bytes) -> str:
    return str(json.loads(line)["message"]["content"])


def _openai_text(line: bytes) -> str:
    if not line.startswith(b"data: {"):
        return ""  # [DONE], or a comment
    choices = json.loads(line[6:]).get("choices") or [{}]
    return str(choices[0].get("delta", {}).get("content") or "")


def reader_session() -> aiohttp.ClientSession:
    """The HTTP client of the baseline and of the API streams. It must cost
    little: with 100 streams, httpx's CPU per read and a new client (SSL context)
    per stream delayed the baseline more than chatsite."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),
        timeout=aiohttp.ClientTimeout(total=60),
    )


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
