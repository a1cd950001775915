"""What a shared link's viewer is sent: frames without internal ids.

A viewer's page and socket name messages by their ordinal in the conversation
(1, 2, 3, ...), never by their database id, and carry no conversation id, client
id or other user's name. Thinking is dropped unless the link includes it. The
messages themselves are shown as on the link's page (`chat.models.SharedMessage`).
"""

from __future__ import annotations

from typing import Literal, TypedDict

from django.urls import reverse

from chat.live.protocol.frames import (
    AttachmentPayload,
    MessageFrame,
    MessagePayload,
    RemovedFrame,
    ServerFrame,
    shown_message,
)
from chat.live.protocol.tool_frames import STEP_FRAMES
from chat.models import SharedMessage, ShareLink
from chat.models.attachments import AttachmentView
from chat.models.shared_messages import shown_steps, viewer_detail

# Server -> viewer frame types; anything else the runner sends is not for viewers.
READ_ONLY_FRAMES = frozenset(
    {
        "message",
        "start",
        "thinking",
        "content",
        "done",
        "error",
        "conversation",
        "removed",
        *STEP_FRAMES,
    }
)


class ViewerConversationFrame(TypedDict):
    """A viewer's `conversation` frame: the title only (no conversation id)."""

    type: Literal["conversation"]
    title: str


ViewerFrame = ServerFrame | ViewerConversationFrame


def shared_message(
    data: MessagePayload, ordinal: int, link: ShareLink, token: str
) -> SharedMessage:
    """From a `message` frame's message (see `chat.live.protocol.frames.message`)."""
    return SharedMessage(
        ordinal=ordinal,
        role=data["role"],
        status=data["status"],
        content=data["content"],
        thinking=data["thinking"] if link.include_thinking else "",
        model_tag=data["model"],
        error_code=data["error_code"],
        error_detail=viewer_detail(data["error_code"], data["error_detail"]),
        source_url=shared_source_url(token, ordinal),
        stats=data["stats"],
        files=[shared_file(token, file) for file in data["attachments"]]
        if link.include_attachments
        else [],
        steps=shown_steps(
            data.get("steps"),  # a frame from a process of an older release has none
            include_thinking=link.include_thinking,
            include_tool_results=link.include_tool_results,
        ),
    )


def shared_file(token: str, file: AttachmentPayload) -> AttachmentView:
    """A file as a link's viewer opens it: through the link."""
    public_id = file["id"]
    return AttachmentView(
        public_id=public_id,
        name=file["name"],
        size=file["size"],
        kind=file["kind"],
        tokens=file["tokens"],
        url=reverse("shared_file", args=[token, public_id]),
        thumbnail_url=reverse("shared_thumbnail", args=[token, public_id])
        if file["thumbnail"]
        else "",
        note=file["note"],
    )


def message(shared: SharedMessage) -> MessageFrame:
    """The viewer's `message` frame: ordinals for ids, no client id."""
    return shown_message(shared, shared.ordinal, client_id="", stats=shared.stats)


def shared_source_url(token: str, ordinal: int) -> str:
    return reverse("shared_message_source", args=[token, ordinal])


class Ordinals:
    """Message id <-> ordinal for one viewer. Messages get added in id order, so
    a new id takes the next ordinal; only the newest ones are ever removed (a
    regenerate or an edit), so their ordinals are given again, as a reload would."""

    def __init__(self, message_ids: list[int]) -> None:
        self.by_id = {pk: n for n, pk in enumerate(message_ids, start=1)}
        self.by_ordinal = {n: pk for pk, n in self.by_id.items()}

    def of(self, message_id: int) -> int:
        ordinal = self.by_id.get(message_id)
        if ordinal is None:
            ordinal = len(self.by_id) + 1
            self.by_id[message_id] = ordinal
            self.by_ordinal[ordinal] = message_id
        return ordinal

    def message_id(self, ordinal: int) -> int | None:
        return self.by_ordinal.get(ordinal)

    def remove(self, message_ids: list[int]) -> list[int]:
        """Forget the removed messages; return the ordinals they had."""
        gone = sorted(self.by_id.pop(pk) for pk in message_ids if pk in self.by_id)
        for ordinal in gone:
            del self.by_ordinal[ordinal]
        return gone


def for_viewer(
    frame: ServerFrame, link: ShareLink, token: str, ordinals: Ordinals
) -> ViewerFrame | None:
    """The frame as the link's viewer gets it, or None if they get none of it.
    Each is a copy: the owner's sockets are sent the same frame."""
    if frame["type"] not in READ_ONLY_FRAMES:
        return None
    if frame["type"] == "message":
        data = frame["message"]
        ordinal = ordinals.of(data["id"])
        return message(shared_message(data, ordinal, link, token))
    if frame["type"] == "conversation":
        return {"type": "conversation", "title": frame["title"]}
    if frame["type"] == "removed":
        gone = ordinals.remove(frame["message_ids"])
        return RemovedFrame(type="removed", message_ids=gone) if gone else None
    if frame["type"] == "error":
        error = frame.copy()
        if error["message_id"] is not None:
            error["message_id"] = ordinals.of(error["message_id"])
            # An answer's failure (not about the viewer's frame).
            error["detail"] = viewer_detail(error["code"], error["detail"])
        return error
    if frame["type"] == "start":
        start = frame.copy()
        start["message_id"] = ordinals.of(start["message_id"])
        if not link.include_thinking:
            start["thinking"] = None
        return start
    if frame["type"] == "thinking" and not link.include_thinking:
        return None
    if frame["type"] in ("thinking", "content", "done"):
        out = frame.copy()
        out["message_id"] = ordinals.of(out["message_id"])
        return out
    if frame["type"] == "tool_result":
        result = frame.copy()
        result["message_id"] = ordinals.of(result["message_id"])
        if not link.include_tool_results:
            result["preview"], result["citations"] = "", []
        return result
    if frame["type"] in ("tool_call", "tool_args", "tool_run", "round"):
        step = frame.copy()
        step["message_id"] = ordinals.of(step["message_id"])
        return step
    return None
