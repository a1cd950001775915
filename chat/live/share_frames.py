"""What a shared link's viewer is shown: messages and frames without internal ids.

A viewer's page and socket name messages by their ordinal in the conversation
(1, 2, 3, ...), never by their database id, and carry no conversation id, client
id or other user's name. Thinking is dropped unless the link includes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.template.loader import render_to_string
from django.urls import reverse

from chat.models import Message, ShareLink

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
    }
)


# What a viewer is told of a failed answer. The owner's detail names the model
# server (its internal address, its own error text): a link's viewers, signed
# out too, get the code's plain sentence instead.
VIEWER_DETAILS = {
    "interrupted": "The server restarted while this answer was being written.",
    "upstream_unreachable": "The model server could not be reached.",
    "upstream_timeout": "The model server took too long to answer.",
    "model_not_found": "The model is not available on its server.",
    "thinking_unsupported": "The model cannot think.",
    "bad_request": "The model server refused the request.",
    "upstream_busy": "The model server was busy.",
    "upstream_error": "The model server reported an error.",
    "stream_cut": "The connection to the model server broke mid-answer.",
    "malformed": "The model server sent a reply that could not be read.",
    "queue_unavailable": "The answer could not wait for the model.",
}
FAILED = "The answer failed."


def viewer_detail(code: str, detail: str) -> str:
    if not code and not detail:
        return ""
    return VIEWER_DETAILS.get(code, FAILED)


@dataclass
class SharedMessage:
    """A message as `chat/_message.html` renders it for a viewer."""

    # A viewer can read it only: no edit, regenerate or versions controls.
    read_only = True

    ordinal: int
    role: str
    status: str
    content: str
    thinking: str
    model_tag: str
    error_code: str
    error_detail: str
    source_url: str
    stats: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls, message: Message, ordinal: int, *, include_thinking: bool, source_url: str
    ) -> SharedMessage:
        return cls(
            ordinal=ordinal,
            role=message.role,
            status=message.status,
            content=message.content,
            thinking=message.thinking if include_thinking else "",
            model_tag=message.model_tag,
            error_code=message.error_code,
            error_detail=viewer_detail(message.error_code, message.error_detail),
            source_url=source_url,
            stats=message.stats(),
        )

    @classmethod
    def from_frame(
        cls, data: dict[str, Any], ordinal: int, link: ShareLink, token: str
    ) -> SharedMessage:
        """From a `message` frame's message (see `chat.live.frames.message`)."""
        return cls(
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
        )

    @property
    def pk(self) -> int:
        return self.ordinal

    @property
    def dom_id(self) -> str:
        return f"message-{self.ordinal}"

    def __getattr__(self, name: str) -> Any:
        # The figures the partial shows (thinking_ms, decode_tps, ...).
        stats = self.__dict__.get("stats", {})
        if name in stats:
            return stats[name]
        raise AttributeError(name)

    def html(self) -> str:
        return render_to_string("chat/_message.html", {"message": self})

    def frame(self) -> dict[str, Any]:
        return {
            "type": "message",
            "message": {
                "id": self.ordinal,
                "role": self.role,
                "status": self.status,
                "content": self.content,
                "thinking": self.thinking,
                "client_id": "",
                "model": self.model_tag,
                "stats": self.stats,
                "error_code": self.error_code,
                "error_detail": self.error_detail,
                "dom_id": self.dom_id,
                "html": self.html(),
            },
        }


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
    frame: dict[str, Any], link: ShareLink, token: str, ordinals: Ordinals
) -> dict[str, Any] | None:
    """The frame as the link's viewer gets it, or None if they get none of it."""
    kind = frame.get("type")
    if kind not in READ_ONLY_FRAMES:
        return None
    if kind == "thinking" and not link.include_thinking:
        return None
    if kind == "message":
        data = frame["message"]
        ordinal = ordinals.of(data["id"])
        return SharedMessage.from_frame(data, ordinal, link, token).frame()
    if kind == "conversation":
        return {"type": "conversation", "title": frame["title"]}
    if kind == "removed":
        gone = ordinals.remove(frame["message_ids"])
        return {"type": "removed", "message_ids": gone} if gone else None
    out = dict(frame)
    if out.get("message_id") is not None:
        out["message_id"] = ordinals.of(out["message_id"])
        if kind == "error":  # an answer's failure (not about the viewer's frame)
            out["detail"] = viewer_detail(out["code"], out["detail"])
    if kind == "start" and not link.include_thinking:
        out["thinking"] = None
    return out
