"""The relay bench's readers of an answer: over the conversation's socket
(directly or through nginx), with live-link viewers beside it, through the
bare relay, and from the simulator itself (the baseline)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import websockets
from websockets.exceptions import InvalidHandshake

from bench.common import StreamResult, assign_arrivals, record_text
from bench.relay.site import Site


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
    end: dict[str, Any] = {}
    try:
        async for raw in ws:
            now = time.time()
            frame = json.loads(raw)
            if frame["type"] == "content":
                record_text(result, chunks, now, frame["delta"])
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
                    record_text(result, chunks, now, text)
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
