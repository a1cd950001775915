"""The frames of a turn of several steps (server -> client), part of the
server's frames (`chat.live.protocol.frames`, whose `ServerFrame` holds them):

  {"type": "tool_call", "message_id": N, "call_id": "...", "name": "...",
   "title": "...", "source": "..."}            the model began writing a call
  {"type": "tool_args", "message_id": N, "call_id": "...", "delta": "..."}
                                               its arguments as they are generated
  {"type": "tool_run", "message_id": N, "call_id": "...", "state": "running" |
   "awaiting_approval", "started": <epoch ms>}  the run began (live timer) or waits
                                               for the user's approval
  {"type": "tool_result", "message_id": N, "call_id": "...", "ok": bool,
   "preview": "...", "size": S, "cut": bool, "ms": float, "error": str | null,
   "citations": [{"url": ..., "title": ...}]}
  {"type": "round", "message_id": N, "round": R}   the next model call of the turn
                                               (thinking and content deltas after
                                               it belong to round R, from 2)

A call's frames are keyed by its `call_id`: a socket that resumes is sent the
steps it may have missed again (`chat.live.engine.turn.steps`), and a call it
shows already is shown anew from its `tool_call`.
"""

from __future__ import annotations

from typing import Literal, TypedDict

RunState = Literal["running", "awaiting_approval"]


class ToolCallFrame(TypedDict):
    type: Literal["tool_call"]
    message_id: int
    call_id: str
    name: str
    title: str
    source: str


class ToolArgsFrame(TypedDict):
    type: Literal["tool_args"]
    message_id: int
    call_id: str
    delta: str


class ToolRunFrame(TypedDict):
    type: Literal["tool_run"]
    message_id: int
    call_id: str
    state: RunState
    started: int  # epoch milliseconds


class CitationPayload(TypedDict):
    url: str
    title: str


class ToolResultFrame(TypedDict):
    type: Literal["tool_result"]
    message_id: int
    call_id: str
    ok: bool
    preview: str
    size: int
    cut: bool
    ms: float
    error: str | None
    citations: list[CitationPayload]


class RoundFrame(TypedDict):
    type: Literal["round"]
    message_id: int
    round: int


StepFrame = ToolCallFrame | ToolArgsFrame | ToolRunFrame | ToolResultFrame | RoundFrame

STEP_FRAMES = frozenset({"tool_call", "tool_args", "tool_run", "tool_result", "round"})


def tool_call(
    message_id: int, call_id: str, name: str, title: str, source: str
) -> ToolCallFrame:
    return {
        "type": "tool_call",
        "message_id": message_id,
        "call_id": call_id,
        "name": name,
        "title": title,
        "source": source,
    }


def tool_args(message_id: int, call_id: str, delta: str) -> ToolArgsFrame:
    return {
        "type": "tool_args",
        "message_id": message_id,
        "call_id": call_id,
        "delta": delta,
    }


def tool_run(
    message_id: int, call_id: str, state: RunState, started: int
) -> ToolRunFrame:
    return {
        "type": "tool_run",
        "message_id": message_id,
        "call_id": call_id,
        "state": state,
        "started": started,
    }


def tool_result(
    message_id: int,
    call_id: str,
    *,
    ok: bool,
    preview: str,
    size: int,
    cut: bool,
    ms: float,
    error: str | None,
    citations: list[CitationPayload],
) -> ToolResultFrame:
    return {
        "type": "tool_result",
        "message_id": message_id,
        "call_id": call_id,
        "ok": ok,
        "preview": preview,
        "size": size,
        "cut": cut,
        "ms": ms,
        "error": error,
        "citations": citations,
    }


def round_frame(message_id: int, number: int) -> RoundFrame:
    return {"type": "round", "message_id": message_id, "round": number}
