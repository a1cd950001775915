"""The API's clients for the relay benchmark (docs/latency.md, rule 9).

Each stream POSTs one question with `stream: true`, to `/v1/chat/completions`
(server-sent events) or `/api/chat` (NDJSON lines), and records when each piece
of text arrives and how long the answer is by then, as the WebSocket client
does: `assign_arrivals` turns that into one arrival per token, which
`bench.relay.run.latencies` sets against the simulator's own send stamps.

aiohttp hands over each read as it comes (`iter_any`, no client-side buffering);
lines are cut here, and a line may span reads. The direct reader of the
simulator (the baseline, in the same run) reads the same way.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

import aiohttp

from bench.common import StreamResult, assign_arrivals, record_text

MODEL = "llama-demo:3b"
# The request's path and the text of one line of its answer ("" for a line
# without answer text, None for a fault: the stream ends there).
Reader = Callable[[bytes], str | None]


def sse_text(line: bytes) -> str | None:
    """An event's `data:` line: its delta's content. Blank lines (the end of
    an event), comments (keep-alives) and `[DONE]` carry none."""
    if not line.startswith(b"data: {"):
        return ""
    event = json.loads(line[6:])
    if "error" in event:
        _fault(event["error"])
        return None
    choices = event.get("choices") or [{}]  # the usage chunk has none
    return str(choices[0].get("delta", {}).get("content") or "")


def ndjson_text(line: bytes) -> str | None:
    """One NDJSON object: its message's content."""
    if not line.strip():
        return ""
    data = json.loads(line)
    if "error" in data:
        _fault(data["error"])
        return None
    return str(data["message"]["content"])


DIALECTS: dict[str, tuple[str, Reader]] = {
    "sse": ("/v1/chat/completions", sse_text),
    "ndjson": ("/api/chat", ndjson_text),
}


def _fault(detail: object) -> None:
    # The row then says "tokens lost"; this says why.
    print(f"bench: an API stream failed: {detail}", file=sys.stderr)


async def through_api(
    base_url: str,
    api_key: str,
    dialect: str,
    key: str,
    ends: list[int],
    session: aiohttp.ClientSession,
) -> StreamResult:
    """One streamed answer to the question `key`, read through the API."""
    path, text_of = DIALECTS[dialect]
    result = StreamResult(key=key)
    chunks: list[tuple[float, int]] = []
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": key}],
        "stream": True,
    }
    headers = {"Authorization": f"Bearer {api_key}"}
    buffer = b""
    result.started = time.time()
    async with session.post(base_url + path, json=body, headers=headers) as response:
        if response.status != 200:
            _fault(f"HTTP {response.status}: {await response.text()}")
            return result
        async for data in response.content.iter_any():
            now = time.time()
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                text = text_of(line)
                if text is None:
                    break
                if text:
                    record_text(result, chunks, now, text)
            else:
                continue
            break
    result.arrivals = assign_arrivals(ends, chunks)
    return result
