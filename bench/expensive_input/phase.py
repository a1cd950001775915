"""One phase of the bench: the user bench's answer over the conversation's
socket and its small uploads beside it, with or without the attackers."""

from __future__ import annotations

import asyncio
import json
import math
import time
from dataclasses import dataclass
from typing import Any

import websockets
from websockets.exceptions import ConnectionClosed

from bench.common import (
    StreamResult,
    answer_text,
    token_ends,
)
from bench.expensive_input.attackers import (
    Attackers,
    Outcome,
    keep_posting,
    request_headers,
    wind_down,
)
from bench.expensive_input.inputs import ATTACHMENTS_PATH, multipart
from bench.relay.clients import read_answer
from bench.relay.run import gc_paused
from bench.relay.site import Site

TPS = 80.0
REFERENCE_SECONDS = 8.0
UPLOAD_EVERY = 1.0  # seconds between the streaming user's small uploads
SMALL_FILE = b"hello world\n"  # 12 bytes
SMALL_UPLOAD_TIMEOUT = 20.0
# After the stream's own length: how long it may still take to arrive.
STREAM_GRACE = 30.0


@dataclass
class Phase:
    stream: StreamResult
    tokens: int  # asked for
    # Per token asked, in ms: its arrival (or the phase's end, if it never
    # came) minus the simulator's send stamp (or, for a token the simulator
    # never sent, when a model at TPS would have sent it).
    latencies_ms: list[float]
    ended: str  # how the answer ended: "done", an error frame's code, ...
    uploads: list[Outcome]

    @property
    def received(self) -> int:
        return len(self.stream.arrivals)

    @property
    def first_token_ms(self) -> float:
        first = self.stream.first_token
        return (first - self.stream.started) * 1000 if first else math.nan


def token_latencies(
    result: StreamResult, log: list[dict[str, Any]], tokens: int, ended: float
) -> list[float]:
    """Phase.latencies_ms of `result`, from the simulator's `log`; `ended`:
    when the phase stopped waiting for tokens."""
    entry = next(
        (e for e in log if e["body"]["messages"][-1]["content"] == result.key), {}
    )
    stamps = entry.get("times", [])
    out = []
    for i in range(tokens):
        sent = stamps[i] if i < len(stamps) else result.started + i / TPS
        if i < len(result.arrivals):
            out.append((result.arrivals[i] - sent) * 1000)
        else:  # at least this late (a token not yet due when it ended: lost)
            out.append(max(0.0, ended - sent) * 1000)
    return out


async def stream_and_upload(
    site: Site,
    conversation: int,
    seconds: float,
    attackers: Attackers | None = None,
) -> Phase:
    """One answer of `seconds` at TPS over the conversation's socket, and the
    small uploads beside it until it ends. The socket is opened first, as the
    page's is when the conversation is shown; then the attackers (if any) are
    started; then the question is asked. The attackers stop when it ends."""
    tokens = int(seconds * TPS)
    site.configure(
        tps=TPS, answer_tokens=tokens, answer_text=answer_text(tokens), ttft_ms=0
    )
    result = StreamResult(key=f"bench conversation {conversation}")
    url = f"ws://127.0.0.1:{site.web_port}/ws/conversations/{conversation}/"
    headers = {"Cookie": site.cookie, "Origin": site.web_url}
    ended = "no answer by the deadline"
    uploads: list[Outcome] = []
    async with websockets.connect(
        url, additional_headers=headers, max_size=None, close_timeout=1
    ) as ws:
        if attackers is not None:
            await attackers.start()
        stopping = asyncio.Event()
        small = multipart("note.txt", "text/plain", SMALL_FILE)
        uploading = asyncio.create_task(
            keep_posting(
                site.web_port,
                ATTACHMENTS_PATH,
                small,
                request_headers(site.cookie),
                uploads,
                stopping,
                SMALL_UPLOAD_TIMEOUT,
                every=UPLOAD_EVERY,
            )
        )
        with gc_paused():
            result.started = time.time()
            try:
                async with asyncio.timeout(seconds + STREAM_GRACE):
                    question = {"type": "send", "content": result.key, "client_id": "b"}
                    await ws.send(json.dumps(question))
                    end = await read_answer(ws, result, token_ends(tokens))
                    ended = "done" if end["type"] == "done" else end.get("code", "?")
            except TimeoutError:
                pass
            except ConnectionClosed:
                ended = f"socket closed by the server ({ws.close_code})"
            finished = time.time()
            if attackers is not None:
                attackers.stop()
            await wind_down([uploading], stopping)
    found = token_latencies(result, site.sim_log(), tokens, finished)
    return Phase(result, tokens, found, ended, uploads)
