"""A message as a shared link's (or a team's) reader is shown it.

Readers name messages by their ordinal in the conversation (1, 2, 3, ...), never
by their database id, and are told a failed answer's plain sentence, never the
owner's detail. The pages (`chat.web.sharing`) and the viewer's socket
(`chat.live.protocol.share_frames`) both show messages through `SharedMessage`, so the
two cannot tell a reader different things.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils import translation
from django.utils.translation import gettext_lazy as _

from chat.models.attachments import AttachmentView
from chat.models.messages import Message

# What a reader is told of a failed answer. The owner's detail names the model
# server (its internal address, its own error text): a link's viewers, signed
# out too, get the code's plain sentence instead.
VIEWER_DETAILS = {
    "interrupted": _("The server restarted while this answer was being written."),
    "upstream_unreachable": _("The model server could not be reached."),
    "upstream_timeout": _("The model server took too long to answer."),
    "model_not_found": _("The model is not available on its server."),
    "thinking_unsupported": _("The model cannot think."),
    "bad_request": _("The model server refused the request."),
    "upstream_busy": _("The model server was busy."),
    "upstream_error": _("The model server reported an error."),
    "stream_cut": _("The connection to the model server broke mid-answer."),
    "malformed": _("The model server sent a reply that could not be read."),
    "queue_unavailable": _("The answer could not wait for the model."),
    # Notices on an answer that is done (chat.live.engine.turn).
    "tool_rounds": _("The model called tools too often: it answered with what it had."),
    "tools_unsupported": _("This answer was written without tools."),
    "quota_reached": _("A quota ended this answer early."),
}
FAILED = _("The answer failed.")


def shown_steps(
    steps: object, *, include_thinking: bool = True, include_tool_results: bool = True
) -> list[dict[str, Any]]:
    """An answer's stored steps (`Message.steps`) as a page is sent them:
    never what the model got of a tool (`text`: the page shows the preview,
    and the whole result can be tens of thousands of characters); for a
    link's reader, thinking only if the link includes it, and a tool's
    preview and citations only if it includes tool results (the call, its
    state and size are shown either way)."""
    if not isinstance(steps, list):
        return []
    shown = []
    for step in steps:
        if not isinstance(step, dict):
            continue
        kind = step.get("kind")
        if kind == "thinking" and not include_thinking:
            continue
        if kind == "tool":
            step = {name: value for name, value in step.items() if name != "text"}
            if not include_tool_results:
                step.update(preview="", citations=[])
        shown.append(step)
    return shown


def viewer_detail(code: str, detail: str) -> str:
    if not code and not detail:
        return ""
    return str(VIEWER_DETAILS.get(code, FAILED))


def owner_detail(code: str, detail: str) -> str:
    """A model server's error for the answer's owner, in the language of the
    moment: the model-server seam (chat/upstream, no Django) words it in
    English around the server's own text, which no catalog can translate. In
    another language the code's sentence comes first, that English after it
    for whoever mends the server; in English the detail says it all alone."""
    sentence = VIEWER_DETAILS.get(code)
    language = translation.get_language() or "en"
    if sentence is None or language.split("-")[0] == "en":
        return detail
    return _("%(sentence)s (%(detail)s)") % {"sentence": sentence, "detail": detail}


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
    steps: list[dict[str, Any]] = field(default_factory=list)  # `shown_steps`

    @classmethod
    def of(
        cls,
        message: Message,
        ordinal: int,
        *,
        include_thinking: bool,
        source_url: str,
        files: list[AttachmentView] | None = None,
        include_tool_results: bool = True,
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
            steps=shown_steps(
                message.steps,
                include_thinking=include_thinking,
                include_tool_results=include_tool_results,
            ),
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
