"""The browser <-> server WebSocket protocol (JSON text frames), both directions.

Client -> server:
  {"type": "send", "content": "...", "client_id": "<uuid>",
   "attachments": ["<id>", ...], "truncate_documents": false}
                               the last two optional: files uploaded to
                               /attachments/ go with the question (content may
                               then be empty); documents too large for the
                               context are refused unless truncate_documents
  {"type": "stop"}
  {"type": "resume", "message_id": N, "offset": K, "thinking_offset": T}
  {"type": "regenerate", "message_id": N}     ask answer N's question again (a new
                                               version of its turn); without
                                               message_id, the last question
  {"type": "edit", "message_id": N, "content": "..."}   ask shown question N again
                                               with new text (a new version);
                                               "attachments" and
                                               "truncate_documents" as for send
                                               (without "attachments" it keeps
                                               its files)
  {"type": "preload"}          the user opened the conversation or started typing:
                               load its model now (at most once a minute per model)
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
from django.utils.formats import number_format
from django.utils.translation import gettext as _

if TYPE_CHECKING:
    from collections.abc import Mapping

    from chat.models import Conversation, Message, VersionSwitch
    from chat.models.attachments import AttachmentView


class FrameError(Exception):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


class SendFrame(TypedDict):
    type: Literal["send"]
    content: str
    client_id: str
    attachments: list[str]  # uploaded files' ids (chat.web.attachments)
    truncate_documents: bool  # send documents cut to fit rather than refuse


class StopFrame(TypedDict):
    type: Literal["stop"]


class ResumeFrame(TypedDict):
    type: Literal["resume"]
    message_id: int
    offset: int
    thinking_offset: int


class RegenerateFrame(TypedDict):
    type: Literal["regenerate"]
    message_id: NotRequired[int]


class EditFrame(TypedDict):
    type: Literal["edit"]
    message_id: int
    content: str
    # None (not given): the edited question keeps its files.
    attachments: list[str] | None
    truncate_documents: bool


class PreloadFrame(TypedDict):
    type: Literal["preload"]


ClientFrame = (
    SendFrame | StopFrame | ResumeFrame | RegenerateFrame | EditFrame | PreloadFrame
)


MAX_INT = 2**63 - 1


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


def parse(text: str | None) -> ClientFrame:
    """Decode and validate one client frame; raise FrameError with a clear reason."""
    if text is None:
        raise FrameError("bad_frame", _("Frames must be JSON text, not binary."))
    if len(text) > max_frame_chars():
        raise FrameError(
            "frame_too_large", _("The frame is larger than the server accepts.")
        )
    data = _decode(text)
    if not isinstance(data, dict):
        raise FrameError("bad_frame", _("A frame must be a JSON object."))
    kind = data.get("type")
    if kind == "send":
        return _parse_send(data)
    if kind == "stop":
        return StopFrame(type="stop")
    if kind == "preload":
        return PreloadFrame(type="preload")
    if kind == "resume":
        return ResumeFrame(
            type="resume",
            message_id=_non_negative_int(data, "message_id"),
            offset=_non_negative_int(data, "offset"),
            thinking_offset=_non_negative_int(data, "thinking_offset", default=0),
        )
    if kind == "regenerate":
        regenerate = RegenerateFrame(type="regenerate")
        if data.get("message_id") is not None:
            regenerate["message_id"] = _non_negative_int(data, "message_id")
        return regenerate
    if kind == "edit":
        attachments = _attachments(data) if "attachments" in data else None
        return EditFrame(
            type="edit",
            message_id=_non_negative_int(data, "message_id"),
            content=_content(data, attachments),
            attachments=attachments,
            truncate_documents=_flag(data, "truncate_documents"),
        )
    raise FrameError(
        "unknown_type",
        _("Unknown frame type: %(type)r.") % {"type": str(kind)[:40]},
    )


def _decode(text: str) -> Any:
    """The frame's JSON value, refused whole when any string in it (a key, a
    field we read or one we ignore) is not valid Unicode: JSON may escape lone
    surrogates (`"\\ud800"`), which no socket frame, log line or database can
    carry. Encoding the decoded value again finds every one in a single pass."""
    try:
        data = json.loads(text)
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        raise FrameError("bad_frame", _("The frame is nested too deeply.")) from None
    except UnicodeEncodeError:  # before ValueError, its base class
        raise FrameError(
            "bad_frame", _("The frame holds text that is not valid Unicode.")
        ) from None
    except ValueError:
        raise FrameError("bad_frame", _("The frame is not valid JSON.")) from None
    return data


def _parse_send(data: dict[str, Any]) -> SendFrame:
    attachments = _attachments(data)
    content = _content(data, attachments)
    client_id = data.get("client_id", "")
    if not isinstance(client_id, str) or len(client_id) > 64:
        raise FrameError(
            "bad_frame", _("client_id must be a string of 64 characters at most.")
        )
    if "\x00" in client_id:
        raise FrameError("bad_frame", _("The client id contains a NUL character."))
    return SendFrame(
        type="send",
        content=content,
        client_id=client_id,
        attachments=attachments,
        truncate_documents=_flag(data, "truncate_documents"),
    )


def _attachments(data: dict[str, Any]) -> list[str]:
    """The ids of the files sent with a question (at most a few dozen)."""
    value = data.get("attachments", [])
    if (
        not isinstance(value, list)
        or len(value) > 100
        or not all(isinstance(i, str) and 0 < len(i) <= 64 for i in value)
    ):
        raise FrameError(
            "bad_frame", _("attachments must be a list of the uploaded files' ids.")
        )
    return list(value)


def _flag(data: dict[str, Any], key: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise FrameError(
            "bad_frame", _("%(key)s must be true or false.") % {"key": key}
        )
    return value


def _content(data: dict[str, Any], attachments: list[str] | None = None) -> str:
    """A message's text: not blank (unless files go with it), not over the
    size limit."""
    content = data.get("content")
    if content is None and attachments:
        content = ""
    if not isinstance(content, str) or (not content.strip() and not attachments):
        raise FrameError("empty_message", _("Type a message before sending."))
    if len(content) > settings.MESSAGE_MAX_CHARS:
        raise FrameError(
            "message_too_long",
            _("The message is %(length)s characters; the limit is %(limit)s.")
            % {
                "length": number_format(len(content), force_grouping=True),
                "limit": number_format(settings.MESSAGE_MAX_CHARS, force_grouping=True),
            },
        )
    if "\x00" in content:
        # PostgreSQL cannot store NUL characters in text.
        raise FrameError("bad_frame", _("The message contains a NUL character."))
    return content


def _non_negative_int(
    data: dict[str, Any], key: str, default: int | None = None
) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FrameError(
            "bad_frame", _("%(key)s must be a non-negative integer.") % {"key": key}
        )
    if value > MAX_INT:  # larger than any id or offset, and than SQLite's integers
        raise FrameError("bad_frame", _("%(key)s is too large.") % {"key": key})
    return value


# Server -> client frames: built only by the functions below (and, for a shared
# link's viewer, by `chat.live.share_frames`), sent only through a `Sink` or the
# runner's broadcast. tests/live/test_protocol.py checks these types against the
# README's table and the browser's handlers (`static/chat/socket.js`).

Kind = Literal["thinking", "content"]
ModelState = Literal["loading", "ready", "error"]


class AttachmentPayload(TypedDict):
    """A file sent with a question (`chat.models.AttachmentView`)."""

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
        },
    }
