"""The WebSocket protocol's client -> server frames: parsed and validated
here, next to the sockets that read them (`chat.sockets.base`); the server's
frames and the frame limits are `chat.live.protocol.frames`.

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
  {"type": "approve", "message_id": N, "call_id": "...", "allow": bool}
                               the user's answer to a tool call awaiting approval
                               (`tool_run` with state "awaiting_approval")
"""

from __future__ import annotations

import json
from typing import Any, Literal, NotRequired, TypedDict

from django.conf import settings
from django.utils.formats import number_format
from django.utils.translation import gettext as _

from chat.live.protocol.frames import max_frame_chars


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


class ApproveFrame(TypedDict):
    type: Literal["approve"]
    message_id: int
    call_id: str
    allow: bool


ClientFrame = (
    SendFrame
    | StopFrame
    | ResumeFrame
    | RegenerateFrame
    | EditFrame
    | PreloadFrame
    | ApproveFrame
)


MAX_INT = 2**63 - 1


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
    if kind == "approve":
        call_id = data.get("call_id")
        allow = data.get("allow")
        if not isinstance(call_id, str) or not call_id or len(call_id) > 200:
            raise FrameError("bad_frame", _("call_id must be a non-empty string."))
        if not isinstance(allow, bool):
            raise FrameError("bad_frame", _("allow must be true or false."))
        return ApproveFrame(
            type="approve",
            message_id=_non_negative_int(data, "message_id"),
            call_id=call_id,
            allow=allow,
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
