"""What a tool's answer becomes for the model and the user (`Outcome`): its
text parts joined, images, audio and binary resources described rather than
passed on, cut to `TOOL_RESULT_MAX_CHARS` with a note saying so."""

from __future__ import annotations

import json
import secrets

from mcp import types

from chat.tools.calls import Outcome

# The user sees this much of a result beside the call (the model gets it all).
PREVIEW_CHARS = 300
# Where a result made small in a worker (`chat.tools.mcp.oversize`) carries
# its figures: a key of this process's own, which no server can guess.
MARK = f"chatsite/outcome-{secrets.token_hex(16)}"


def failed(reason: str) -> Outcome:
    """A run that gave no result: the model is told why, and so is the user."""
    return Outcome(text=f"Error: {reason}", preview=reason, error=reason)


def cut(text: str, limit: int, *, error: str | None = None) -> Outcome:
    size = len(text)
    if size > limit:
        text = (
            text[:limit] + f"\n\n[Cut: the result has {size} characters; "
            f"the first {limit} are above.]"
        )
    return Outcome(
        text=text,
        preview=text[:PREVIEW_CHARS],
        size=size,
        cut=size > limit,
        error=error,
    )


def outcome_of(result: types.CallToolResult, limit: int) -> Outcome:
    figures = (result.meta or {}).get(MARK)
    if isinstance(figures, dict) and len(result.content) == 1:
        # Made small in a worker: its one text part is the outcome's text.
        text = _described(result.content[0])
        return Outcome(
            text=text,
            preview=text[:PREVIEW_CHARS],
            size=int(figures["size"]),
            cut=bool(figures["cut"]),
            error=figures["error"],
        )
    parts = [_described(part) for part in result.content]
    if not parts and result.structured_content is not None:
        parts = [json.dumps(result.structured_content, ensure_ascii=False)]
    text = "\n".join(parts)
    if result.is_error:
        reason = text[:PREVIEW_CHARS] or "the tool failed"
        return cut(f"Error: {text or reason}", limit, error=reason)
    return cut(text, limit)


def _described(part: types.ContentBlock) -> str:
    if isinstance(part, types.TextContent):
        return part.text
    if isinstance(part, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(part, types.ImageContent) else "audio"
        return f"[{kind}: {part.mime_type}, {_bytes(part.data)}, not shown]"
    if isinstance(part, types.ResourceLink):
        return f"[resource link: {part.name} <{part.uri}>]"
    if isinstance(part, types.EmbeddedResource):
        resource = part.resource
        if isinstance(resource, types.TextResourceContents):
            return f"[resource <{resource.uri}>]\n{resource.text}"
        mime = resource.mime_type or "binary"
        return (
            f"[resource <{resource.uri}>: {mime}, {_bytes(resource.blob)}, not shown]"
        )
    return f"[{getattr(part, 'type', 'unknown')} content, not shown]"


def _bytes(base64_text: str) -> str:
    return f"about {len(base64_text) * 3 // 4} bytes"
