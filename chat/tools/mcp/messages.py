"""One MCP message at a time, as it comes off the wire: held to
`MCP_MESSAGE_MAX_BYTES` (more fails unread), and one over
`MCP_LARGE_MESSAGE_BYTES` made small in a worker process
(`chat.tools.mcp.oversize`) before the SDK or our code parses it.

Why a worker: the SDK parses and validates a message in one call that holds
the GIL (pydantic): for a 50 MB result that stalled the site's event loop
0.3-0.75 s, though it ran on the MCP thread (bench/tools). Here the MCP
thread only finds where a message ends (`bytes.find` over what arrived)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx2
from django.conf import settings

from chat import work
from chat.tools.mcp.oversize import RequestId, error, shrunk
from chat.tools.mcp.results import MARK

# Where a Server-Sent Event ends: a blank line, in any of its line endings.
_EVENT_ENDS = (b"\r\n\r\n", b"\n\n", b"\r\r")


class TooLarge(Exception):
    """The server sent more than `MCP_MESSAGE_MAX_BYTES` for one message."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of a server's messages, read from the settings when a
    session opens (a pooled session is keyed by them)."""

    max_bytes: int
    large_bytes: int
    chars: int
    seconds: float
    memory_bytes: int

    @classmethod
    def now(cls) -> Limits:
        return cls(
            max_bytes=int(settings.MCP_MESSAGE_MAX_BYTES),
            large_bytes=int(settings.MCP_LARGE_MESSAGE_BYTES),
            chars=int(settings.TOOL_RESULT_MAX_CHARS),
            seconds=float(settings.MCP_PARSE_SECONDS),
            memory_bytes=int(settings.MCP_PARSE_MEMORY),
        )


async def smaller(
    data: bytes, *, sse: bool, limits: Limits, owner: str, request_id: RequestId
) -> bytes | None:
    """`data` made small in a worker (`oversize.shrunk`); b"" when nothing is
    passed on. Over its budget: an error answering `request_id` when there
    is one to answer (None otherwise: the caller gives up the connection)."""
    budget = work.Budget(seconds=limits.seconds, memory_bytes=limits.memory_bytes)
    try:
        return await work.run(
            shrunk,
            data,
            sse,
            limits.chars,
            MARK,
            request_id,
            owner=owner,
            budget=budget,
        )
    except work.Exhausted as exhausted:
        if request_id is None and sse:
            return None
        why = f"its answer of {len(data)} bytes could not be read: {exhausted.message}"
        message = error(request_id, why)
        return b"event: message\r\ndata: " + message + b"\r\n\r\n" if sse else message


class Messages(httpx2.AsyncByteStream):
    """A response's body as the SDK reads it, one message at a time: each
    Server-Sent Event (`sse`) or the whole JSON body."""

    def __init__(
        self,
        stream: httpx2.AsyncByteStream,
        *,
        sse: bool,
        limits: Limits,
        owner: str,
        request_id: RequestId,
    ) -> None:
        self.stream, self.sse, self.limits = stream, sse, limits
        self.owner, self.request_id = owner, request_id

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pending = bytearray()
        scanned = 0  # where to look for an event's end next
        async for chunk in self.stream:
            pending += chunk
            while self.sse and (end := _event_end(pending, scanned)) > 0:
                event = bytes(pending[:end])
                del pending[:end]
                scanned = 0
                if (out := await self._passed(event)) is None:
                    return
                yield out
            scanned = max(0, len(pending) - 3)
            if len(pending) > self.limits.max_bytes:
                raise TooLarge(
                    f"the server sent more than {self.limits.max_bytes} bytes "
                    "in one message"
                )
        if pending and (out := await self._passed(bytes(pending))) is not None:
            yield out

    async def _passed(self, message: bytes) -> bytes | None:
        if len(message) <= self.limits.large_bytes:
            return message
        return await smaller(
            message,
            sse=self.sse,
            limits=self.limits,
            owner=self.owner,
            request_id=self.request_id,
        )

    async def aclose(self) -> None:
        await self.stream.aclose()


def request_id_of(request: httpx2.Request) -> RequestId:
    """The JSON-RPC id of the request `request` carries (None: not one)."""
    if request.method != "POST":
        return None
    try:
        body = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    found = body.get("id") if isinstance(body, dict) else None
    return found if isinstance(found, int | str) else None


def _event_end(pending: bytearray, start: int) -> int:
    """Where the first whole event in `pending` ends (0: none yet)."""
    ends = [
        at + len(mark) for mark in _EVENT_ENDS if (at := pending.find(mark, start)) >= 0
    ]
    return min(ends, default=0)
