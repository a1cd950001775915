"""A message as a shared link's (or a team's) reader is shown it.

Readers name messages by their ordinal in the conversation (1, 2, 3, ...), never
by their database id, and are told a failed answer's plain sentence, never the
owner's detail. The pages (`chat.web.sharing`) and the viewer's socket
(`chat.live.share_frames`) both show messages through `SharedMessage`, so the
two cannot tell a reader different things.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chat.models.attachments import AttachmentView
from chat.models.messages import Message

# What a reader is told of a failed answer. The owner's detail names the model
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
    """A message as `chat/_message.html` renders it for a reader."""

    # A reader can read it only: no edit, regenerate or versions controls.
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
    files: list[AttachmentView] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        message: Message,
        ordinal: int,
        *,
        include_thinking: bool,
        source_url: str,
        files: list[AttachmentView] | None = None,
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
            files=files or [],
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
