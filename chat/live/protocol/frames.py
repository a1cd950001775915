"""The WebSocket protocol's server -> client frames (JSON text), and the
frame limits of both directions. What the client sends is parsed next to the
sockets (`chat.sockets.client_frames`).

Server -> client:
  {"type": "message", "message": {...}}       a stored message (echo or final answer)
  {"type": "start", "message_id": N, "model": "...", "thinking": bool | null}
  {"type": "thinking" | "content", "message_id": N, "delta": "...", "tokens": T}
                               "tokens" only when the delta holds more than one
                               token (deltas merged when several came in one read)
  {"type": "done", "message_id": N, "status": "done" | "stopped" | "error", "stats": {}}
  {"type": "error", "message_id": N | null, "code": "...", "detail": "..."}
  {"type": "conversation", "id": N, "title": "..."}   the conversation was renamed
  {"type": "removed", "message_ids": [N, ...]}  messages taken off the shown branch
                                                by a regenerate, an edit (their new
                                                turn follows) or another version of
                                                a turn (its question and the branch
                                                below it follow as `message` frames)
  {"type": "queued", "message_id": N, "position": P}  after `start`, while the answer
      waits for a model slot (P = 1 is next); sent again when P changes
  {"type": "model", "state": "loading" | "ready" | "error", "model": "...",
   "load_ms": float | null, "detail": "..."}   the model server is loading the
      conversation's model (after a preload, or while an answer waits for its first
      token); "ready" carries our clock's load time, "error" why a preload failed
  tool_call, tool_args, tool_run, tool_result, round   the steps of a turn with
      tools (`chat.live.protocol.tool_frames`)

Offsets count Unicode code points of the answer (or thinking) text the client has.

Limits: a frame longer than MESSAGE_MAX_CHARS + 4096 characters is refused
(`frame_too_large`), a message longer than MESSAGE_MAX_CHARS too
(`message_too_long`). Each socket may send WS_FRAME_RATE frames a second on
average, in bursts of WS_FRAME_BURST (`chat.sockets.ratelimit`): frames over that are
dropped, the first of a run answered with a `rate_limited` error; after about
WS_FLOOD_CLOSE_AFTER dropped in quick succession the socket is closed with
code 4429.
Other close codes: 4401 signed out, 4403 not your conversation.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal, NotRequired, Protocol, TypedDict

import orjson
from django.conf import settings
from django.template.loader import render_to_string

from chat.live.protocol.tool_frames import StepFrame
from chat.models.shared_messages import shown_steps

if TYPE_CHECKING:
    from collections.abc import Mapping

    from chat.models import Conversation, Message, VersionSwitch
    from chat.models.attachments import AttachmentView


def max_frame_chars() -> int:
    # Room for the JSON around a message of the largest accepted size.
    return settings.MESSAGE_MAX_CHARS + 4096


# Daphne closes a socket (1009) whose message is larger than this many bytes,
# before the application sees it: `daphne --websocket-max-message-size`.
DAPHNE_MAX_MESSAGE_BYTES = 1024 * 1024


def max_frame_bytes() -> int:
    """The WebSocket message size Daphne must accept: the largest frame we take,
    in UTF-8 (at most 4 bytes per code point), and never below Daphne's default."""
    return max(DAPHNE_MAX_MESSAGE_BYTES, 4 * max_frame_chars())


# Server -> client frames: built only by the functions below (and, for a shared
# link's viewer, by `chat.live.protocol.share_frames`), sent only through a
# `Sink` or the runner's broadcast. tests/live/protocol/test_protocol.py checks
# these types against the README's table and the browser's handlers
# (`static/chat/socket.js`).

Kind = Literal["thinking", "content"]
ModelState = Literal["loading", "ready", "error"]


class AttachmentPayload(TypedDict):
    """A file sent with a question (`chat.models.attachments.AttachmentView`)."""

    id: str
    name: str
    size: int
    kind: str
    tokens: int
    note: str
    thumbnail: bool


class MessagePayload(TypedDict):
    """A stored message as the page shows it (`message` frames)."""

    id: int
    role: str
    status: str
    content: str
    thinking: str
    client_id: str
    model: str
    stats: dict[str, Any]
    error_code: str
    error_detail: str
    dom_id: str
    html: str
    attachments: list[AttachmentPayload]
    # A turn with tools' steps as shown (`shown_steps`), for a link's readers.
    steps: list[dict[str, Any]]


class MessageFrame(TypedDict):
    type: Literal["message"]
    message: MessagePayload


class StartFrame(TypedDict):
    type: Literal["start"]
    message_id: int
    model: str
    thinking: bool | None


class QueuedFrame(TypedDict):
    type: Literal["queued"]
    message_id: int
    position: int


class DeltaFrame(TypedDict):
    type: Kind
    message_id: int
    delta: str
    tokens: NotRequired[int]  # when more than one: the page counts what it shows


class DoneFrame(TypedDict):
    type: Literal["done"]
    message_id: int
    status: str
    stats: dict[str, Any]


class ErrorFrame(TypedDict):
    type: Literal["error"]
    message_id: int | None
    code: str
    detail: str
    # A question not stored after all ("not_stored"): its text, for the page
    # that sent it to give back (it may have been shown and echoed already).
    content: NotRequired[str]


class ModelFrame(TypedDict):
    type: Literal["model"]
    state: ModelState
    model: str
    load_ms: NotRequired[float | None]  # "ready" only
    detail: NotRequired[str]  # when there is one


class ConversationFrame(TypedDict):
    type: Literal["conversation"]
    id: int
    title: str


class RemovedFrame(TypedDict):
    type: Literal["removed"]
    message_ids: list[int]


ServerFrame = (
    MessageFrame
    | StartFrame
    | QueuedFrame
    | DeltaFrame
    | DoneFrame
    | ErrorFrame
    | ModelFrame
    | ConversationFrame
    | RemovedFrame
    | StepFrame
)


def encode(frame: ServerFrame | Mapping[str, Any]) -> str:
    """The frame's text on the socket: JSON, UTF-8 as is (not \\u-escaped).

    orjson, since it runs once per token and socket (docs/latency.md, rule 1):
    under a microsecond for a delta frame, tens of times faster than the
    standard library's `json.dumps`. What orjson refuses
    (a lone surrogate, an integer past 64 bits) goes through the standard library
    as before, which encodes it or raises the same error as it always did.
    """
    try:
        return orjson.dumps(frame).decode()
    except orjson.JSONEncodeError:
        return json.dumps(frame, ensure_ascii=False)


def delta(kind: Kind, message_id: int, text: str, tokens: int = 1) -> DeltaFrame:
    frame: DeltaFrame = {"type": kind, "message_id": message_id, "delta": text}
    if tokens != 1:
        frame["tokens"] = tokens
    return frame


def tokens_in(frame: DeltaFrame) -> int:
    return frame.get("tokens", 1)


def merged(first: DeltaFrame, then: DeltaFrame) -> DeltaFrame:
    """One frame for two deltas of the same kind and message, in order."""
    return delta(
        first["type"],
        first["message_id"],
        first["delta"] + then["delta"],
        tokens_in(first) + tokens_in(then),
    )


def start(message_id: int, model: str, thinking: bool | None) -> StartFrame:
    return {
        "type": "start",
        "message_id": message_id,
        "model": model,
        "thinking": thinking,
    }


def queued(message_id: int, position: int) -> QueuedFrame:
    return {"type": "queued", "message_id": message_id, "position": position}


def done(message: Message) -> DoneFrame:
    return {
        "type": "done",
        "message_id": message.pk,
        "status": message.status,
        "stats": message.stats(),
    }


def error(
    message_id: int | None, code: str, detail: str, *, content: str | None = None
) -> ErrorFrame:
    frame: ErrorFrame = {
        "type": "error",
        "message_id": message_id,
        "code": code,
        "detail": detail,
    }
    if content is not None:
        frame["content"] = content
    return frame


def model_state(
    state: ModelState,
    model: str,
    *,
    load_ms: float | None = None,
    detail: str = "",
) -> ModelFrame:
    frame: ModelFrame = {"type": "model", "state": state, "model": model}
    if state == "ready":
        frame["load_ms"] = load_ms
    if detail:
        frame["detail"] = detail
    return frame


def conversation(conversation: Conversation) -> ConversationFrame:
    return {"type": "conversation", "id": conversation.pk, "title": conversation.title}


def untitled(conversation: Conversation) -> ConversationFrame:
    """The conversation has no title (again): it is shown as a new one."""
    return {
        "type": "conversation",
        "id": conversation.pk,
        "title": conversation.untitled_title(),
    }


def removed(message_ids: list[int]) -> RemovedFrame:
    return {"type": "removed", "message_ids": message_ids}


def version_shown(switch: VersionSwitch) -> list[ServerFrame]:
    """Another version of a turn chosen: what it replaces, then it and the
    branch below it."""
    return [removed(switch.removed), *(message(m) for m in switch.shown)]


class Shown(Protocol):
    """What `chat/_message.html` and a `message` frame read of a message: a
    `Message`, or a shared link's `SharedMessage`."""

    @property
    def files(self) -> list[AttachmentView]: ...
    @property
    def role(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def thinking(self) -> str: ...
    @property
    def model_tag(self) -> str: ...
    @property
    def error_code(self) -> str: ...
    @property
    def error_detail(self) -> str: ...
    @property
    def dom_id(self) -> str: ...
    @property
    def steps(self) -> list[dict[str, Any]]: ...


def message(message: Message) -> MessageFrame:
    return shown_message(
        message, message.pk, client_id=message.client_id, stats=message.stats()
    )


def shown_message(
    shown: Shown, message_id: int, *, client_id: str, stats: dict[str, Any]
) -> MessageFrame:
    """A `message` frame, its HTML rendered from `shown`."""
    return {
        "type": "message",
        "message": {
            "id": message_id,
            "role": shown.role,
            "status": shown.status,
            "content": shown.content,
            "thinking": shown.thinking,
            "client_id": client_id,
            "model": shown.model_tag,
            "stats": stats,
            "error_code": shown.error_code,
            "error_detail": shown.error_detail,
            "dom_id": shown.dom_id,
            "html": render_to_string("chat/_message.html", {"message": shown}),
            "attachments": [
                {
                    "id": file.public_id,
                    "name": file.name,
                    "size": file.size,
                    "kind": file.kind,
                    "tokens": file.tokens,
                    "note": file.note,
                    "thumbnail": bool(file.thumbnail_url),
                }
                for file in shown.files
            ],
            "steps": shown_steps(shown.steps),
        },
    }
