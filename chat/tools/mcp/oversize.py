"""A large MCP message made small, in a worker process (`chat.work`: run by
`chat.tools.mcp.messages`, preloaded by `chat.work.preload`): parsing and
validating 50 MB of JSON holds the GIL for half a second in one call, which
no thread of the serving process may do (docs/tools.md, "What a call
gives"). Here it is paid for under a time and memory budget, and what goes
back is a message the SDK reads in microseconds.

A tool's result comes back as one text part, already what the model gets
(cut to the caller's limit with the note, images described: `outcome_of`),
with what the caller needs to rebuild the `Outcome` under a `_meta` key it
chose (`chat.tools.mcp.results.MARK`: a server cannot forge it). An error's
message is cut the same way. A request or notification that large is not
passed on; an answer that is not JSON-RPC, or not a tool's result, becomes
an error for the request that waits for it."""

from __future__ import annotations

import json
import re
from typing import Any

from mcp.types import (
    CallToolResult,
    JSONRPCError,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from chat.tools.mcp.results import outcome_of

# JSON-RPC's "internal error".
INTERNAL_ERROR = -32603
_LINES = re.compile(rb"\r\n|\r|\n")

RequestId = int | str | None


def shrunk(
    data: bytes, sse: bool, chars: int, mark: str, request_id: RequestId
) -> bytes:
    """`data` (a whole Server-Sent Event when `sse`, else one JSON-RPC
    message) made small: the same framing, or b"" when nothing is passed on.
    `request_id`: the request whose answer this is, when known."""
    if not sse:
        return _message(data, chars, mark, request_id) or b""
    event, event_id, lines = "message", "", []
    for line in _LINES.split(data):
        name, _, value = line.partition(b":")
        value = value.removeprefix(b" ")
        if name == b"data":
            lines.append(value)
        elif name == b"event":
            event = value.decode(errors="replace")
        elif name == b"id":
            event_id = value.decode(errors="replace")
    small = _message(b"\n".join(lines), chars, mark, request_id)
    if event != "message" or small is None:
        return b""
    head = "event: message\r\n" + (f"id: {event_id}\r\n" if event_id else "")
    return head.encode() + b"data: " + small + b"\r\n\r\n"


def error(request_id: RequestId, message: str) -> bytes:
    """A JSON-RPC error answering `request_id` (0 when unknown: over
    Streamable HTTP the SDK gives an answer in a request's stream that
    request's id)."""
    return _json(
        {
            "jsonrpc": "2.0",
            "id": 0 if request_id is None else request_id,
            "error": {"code": INTERNAL_ERROR, "message": message},
        }
    )


def _message(data: bytes, chars: int, mark: str, request_id: RequestId) -> bytes | None:
    size = len(data)
    try:
        message = jsonrpc_message_adapter.validate_json(data)
    except ValidationError:
        if request_id is None:
            return None
        return error(request_id, f"it sent {size} bytes that are not JSON-RPC")
    if isinstance(message, JSONRPCError):
        return error(message.id, message.error.message[:chars])
    if not isinstance(message, JSONRPCResponse):
        return None
    try:
        result = CallToolResult.model_validate(message.result)
    except ValidationError:
        return error(message.id, f"an answer of {size} bytes is not a tool's result")
    outcome = outcome_of(result, chars)
    figures = {"size": outcome.size, "cut": outcome.cut, "error": outcome.error}
    small = {
        "content": [{"type": "text", "text": outcome.text}],
        "isError": outcome.error is not None,
        "_meta": {mark: figures},
    }
    return _json({"jsonrpc": "2.0", "id": message.id, "result": small})


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
