"""One turn of the tools bench: asked over the conversation's socket (every
frame kept with its arrival), then each of its model requests sent again to
the simulator directly (the reference), and turned into per-token latencies
by round and step kind, and the gaps from a result to the next request."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import websockets

from bench.common import assign_arrivals
from bench.tools.serve import ready_at
from bench.tools.site import ToolSite

# A step kind of the stream: what the model writes, as the socket shows it.
KINDS = ("thinking", "tool_call", "tool_args", "content")
Token = tuple[str, str, float]  # kind, text, arrival (wall clock)


@dataclass
class TurnTimes:
    """Per (round, kind): the added latency's two sides, in ms; and the gaps."""

    relayed: dict[tuple[int, str], list[float]] = field(
        default_factory=lambda: defaultdict(list)
    )
    direct: dict[tuple[int, str], list[float]] = field(
        default_factory=lambda: defaultdict(list)
    )
    gaps: list[float] = field(default_factory=list)
    requests: int = 0
    status: str = ""
    # Tokens the socket never showed, and requests whose events and stamps
    # did not pair one to one (either would make the figures wrong).
    lost: int = 0
    unmatched: int = 0


async def ask(site: ToolSite, conversation_id: int, question: str) -> list[Any]:
    """The turn's frames over the owner's socket: (arrival, frame), to `done`."""
    url = f"ws://127.0.0.1:{site.web_port}/ws/conversations/{conversation_id}/"
    headers = {"Cookie": site.cookie, "Origin": site.web_url}
    got: list[Any] = []
    async with websockets.connect(url, additional_headers=headers) as ws:
        await ws.send(json.dumps({"type": "send", "content": question}))
        async for raw in ws:
            now = time.time()
            frame = json.loads(raw)
            got.append((now, frame))
            if frame["type"] == "done":
                break
            if frame["type"] == "error" and frame.get("message_id") is None:
                raise RuntimeError(f"the turn was refused: {frame}")
    return got


def socket_tokens(frames: list[Any]) -> dict[tuple[int, str], list[tuple[float, int]]]:
    """Per (round, kind): each frame's arrival and that kind's text length so
    far in the round (the chunks `assign_arrivals` reads)."""
    chunks: dict[tuple[int, str], list[tuple[float, int]]] = defaultdict(list)
    current = 1
    for arrived, frame in frames:
        kind = frame["type"]
        if kind == "round":
            current = int(frame["round"])
            continue
        if kind not in KINDS:
            continue
        text = frame["name"] if kind == "tool_call" else frame["delta"]
        seen = chunks[(current, kind)]
        seen.append((arrived, (seen[-1][1] if seen else 0) + len(text)))
    return chunks


async def replay(
    session: aiohttp.ClientSession, site: ToolSite, body: Any
) -> list[Token]:
    """The request sent again to the simulator: one token per event that
    carries text (the events the simulator stamps), with its arrival."""
    tokens: list[Token] = []
    buffer = b""
    url = f"{site.sim_url}/v1/chat/completions"
    async with session.post(url, json=body) as response:
        async for data in response.content.iter_any():
            now = time.time()
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.startswith(b"data: {"):
                    tokens += [(k, t, now) for k, t in _delta(json.loads(line[6:]))]
    return tokens


def _delta(event: dict[str, Any]) -> list[tuple[str, str]]:
    """The event's token as (kind, text); none for the role, ending, usage."""
    delta = (event.get("choices") or [{}])[0].get("delta") or {}
    for field_name in ("reasoning_content", "reasoning"):
        if delta.get(field_name):
            return [("thinking", delta[field_name])]
    if delta.get("content"):
        return [("content", delta["content"])]
    out = []
    for call in delta.get("tool_calls") or []:
        function = call.get("function") or {}
        if function.get("name"):
            out.append(("tool_call", function["name"]))
        elif function.get("arguments"):
            out.append(("tool_args", function["arguments"]))
    return out


def _add(
    into: dict[tuple[int, str], list[float]],
    number: int,
    tokens: list[Token],
    sent: list[float],
    arrivals: dict[str, list[float]],
) -> None:
    """Each token's arrival (the next of its kind) minus the simulator's stamp
    of it, in ms, under (round `number`, kind); a token never seen is left out."""
    seen = dict.fromkeys(KINDS, 0)
    for (kind, _, _), stamp in zip(tokens, sent, strict=False):
        index = seen[kind]
        seen[kind] += 1
        if index < len(arrivals[kind]):
            into[(number, kind)].append((arrivals[kind][index] - stamp) * 1000)


async def time_turn(
    site: ToolSite, session: aiohttp.ClientSession, conversation_id: int, key: str
) -> TurnTimes:
    """Ask `key` in the conversation, replay its requests, and time both.
    The simulator's log is empty at the start (`site.configure`)."""
    frames = await ask(site, conversation_id, key)
    asked = sorted(site.sim_log(), key=lambda entry: entry["started"])
    replayed = [await replay(session, site, entry["body"]) for entry in asked]
    again = site.sim_log()[len(asked) :]
    times = TurnTimes(requests=len(asked), status=frames[-1][1].get("status", ""))
    chunks = socket_tokens(frames)
    for number, (entry, tokens, direct) in enumerate(
        zip(asked, replayed, again, strict=True), start=1
    ):
        arrivals_of: dict[str, list[float]] = {}
        for kind in KINDS:
            ends, total = [], 0
            for token_kind, text, _ in tokens:
                if token_kind == kind:
                    total += len(text)
                    ends.append(total)
            arrivals_of[kind] = assign_arrivals(ends, chunks.get((number, kind), []))
        _add(times.relayed, number, tokens, entry["times"], arrivals_of)
        direct_arrivals = {
            kind: [at for k, _, at in tokens if k == kind] for kind in KINDS
        }
        _add(times.direct, number, tokens, direct["times"], direct_arrivals)
        times.unmatched += abs(len(tokens) - len(entry["times"]))
        times.lost += sum(1 for kind, _, _ in tokens if kind in KINDS) - sum(
            len(arrivals_of[kind]) for kind in KINDS
        )
        results = [m for m in entry["body"]["messages"] if m.get("role") == "tool"]
        ready = ready_at(str(results[-1].get("content", ""))) if results else None
        if number > 1 and ready is not None:
            times.gaps.append((entry["started"] - ready) * 1000)
    return times
