"""What every model-server client yields and raises, whatever the wire format.

A client yields lists of `Event`s (`Delta` pieces of thinking or answer text,
`ToolCallDelta` pieces of the tool calls the model writes, then one
`Finished`) and raises `UpstreamError` for every failure. The error helpers
below turn HTTP statuses and httpx exceptions into those errors; they are
shared by every backend so that the same fault reads the same to the user.
"""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass
from typing import Any, Literal

import httpx

# Server messages are shown to users; a proxy's HTML error page must not flood them.
MAX_MESSAGE_CHARS = 300

Stage = Literal["request", "waiting", "streaming"]


@dataclass(frozen=True, slots=True)
class Delta:
    kind: Literal["thinking", "content"]
    text: str
    # Characters of the server's text replaced by U+FFFD (`cleaned`).
    replaced: int = 0


# What no answer may hold: PostgreSQL refuses NUL in text, and a lone surrogate
# (which JSON can escape: "\ud800") cannot be encoded as UTF-8 for a socket
# frame or the database.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def cleaned(events: list[Event]) -> list[Event]:
    """`events` with NUL and lone surrogates in their text replaced by U+FFFD,
    counted in `Delta.replaced` (and in a tool call's id, name and arguments,
    which are stored and sent to sockets too). (A surrogate pair escaped in JSON
    arrives already joined into one code point, so every surrogate left is
    lone.)"""
    out = events
    for i, event in enumerate(events):
        if isinstance(event, Delta):
            if _UNSTORABLE.search(event.text) is None:
                continue
            text, count = _UNSTORABLE.subn("\ufffd", event.text)
            clean: Event = Delta(event.kind, text, event.replaced + count)
        elif isinstance(event, ToolCallDelta):
            parts = (event.id, event.name, event.arguments)
            if all(_UNSTORABLE.search(part) is None for part in parts):
                continue
            clean = ToolCallDelta(
                event.index, *(_UNSTORABLE.sub("\ufffd", part) for part in parts)
            )
        else:
            continue
        if out is events:
            out = list(events)
        out[i] = clean
    return out


@dataclass(frozen=True, slots=True)
class Finished:
    done_reason: str
    prompt_tokens: int | None = None
    prompt_eval_ms: float | None = None
    output_tokens: int | None = None
    eval_ms: float | None = None
    load_ms: float | None = None
    total_ms: float | None = None


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call the model is writing, in either dialect (Ollama's
    `message.tool_calls`, OpenAI's streamed `delta.tool_calls`, Qwen3's inline
    `<tool_call>` tags). `index` orders the calls of one model reply; the first
    piece of a call carries its `name` and `id` (the server's, or one made up
    when it gave none); `arguments` is the next piece of the call's arguments
    as JSON text (a server that sends a call whole sends it in one piece). A
    reply that asks for tools ends with `Finished(done_reason="tool_calls")`."""

    index: int
    id: str = ""
    name: str = ""
    arguments: str = ""


Event = Delta | ToolCallDelta | Finished


class UpstreamError(Exception):
    """A model-server failure: `code` for the program, `detail` for the user."""

    # Seconds a busy server asked us to wait (`Retry-After`), when it said.
    retry_after: float | None = None

    def __init__(self, code: str, detail: str, *, status: int | None = None) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = status

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only `status` would otherwise be lost (or fail) when pickled.
        return _rebuild_error, (self.code, self.detail, self.status)

    def __repr__(self) -> str:
        return f"UpstreamError({self.code!r}, {self.detail!r}, status={self.status!r})"


def _rebuild_error(code: str, detail: str, status: int | None) -> UpstreamError:
    return UpstreamError(code, detail, status=status)


def error_text(value: object) -> str:
    """Return the message of an `error` value: a string, or an object's `message`."""
    if isinstance(value, dict):
        value = value.get("message", value)
    text = value if isinstance(value, str) else json.dumps(value)
    text = " ".join(text.split())
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 1] + "…"
    return text


def server_message(body: bytes, fallback: str) -> str:
    """Return the message of an error body (JSON `{"error": ...}` or text)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error") or data.get("message") or data.get("detail")
        if error:
            return error_text(error)
    return error_text(text) or fallback


def sentence(text: str) -> str:
    """Return `text` ending with a full stop (server messages often have none)."""
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def cut_short(base_url: str) -> UpstreamError:
    """The error of a body that ended before the answer's final chunk."""
    detail = (
        f"The model server at {base_url} stopped before the answer was "
        "complete (the connection closed without a final chunk)."
    )
    return UpstreamError("stream_cut", detail)


def ended_early(
    base_url: str, *, parsed: int, malformed: int, wire: str, hint: str
) -> UpstreamError:
    """The error of a body that ended before its final event: nothing in it was
    in the `wire` format (a wrong address or backend, `hint` says what to check),
    or it was cut short."""
    if parsed == 0 and malformed:
        detail = f"The model server at {base_url} did not answer in {wire}. {hint}"
        return UpstreamError("malformed", detail)
    return cut_short(base_url)


def error_for_status(
    status: int, message: str, *, base_url: str, path: str, model: str | None
) -> UpstreamError:
    """Map a non-200 answer to an `UpstreamError`, keeping the server's message."""
    server = f"The model server at {base_url}"
    said = sentence(message)
    if status == 404 and model is not None:
        detail = f'Model "{model}" was not found on the model server at {base_url}'
        return UpstreamError("model_not_found", f"{detail}: {said}", status=status)
    if status == 400 and "does not support thinking" in message:
        detail = f"{server} refused thinking: {said} Turn thinking off for this chat."
        return UpstreamError("thinking_unsupported", detail, status=status)
    if status in (429, 503):
        detail = f"{server} is busy (HTTP {status}): {said} Try again in a moment."
        return UpstreamError("upstream_busy", detail, status=status)
    if status == 404:
        detail = (
            f"{server} has no {path} (HTTP 404): {said} "
            f"Check that the address points at {_kind_of_server(path)}."
        )
        return UpstreamError("upstream_error", detail, status=status)
    if 400 <= status < 500:
        detail = f"{server} rejected the request (HTTP {status}): {said}"
        return UpstreamError("bad_request", detail, status=status)
    if status >= 500:
        detail = f"{server} failed (HTTP {status}): {said}"
        return UpstreamError("upstream_error", detail, status=status)
    detail = f"{server} answered with an unexpected HTTP {status}: {said}"
    return UpstreamError("upstream_error", detail, status=status)


def error_for_transport(
    exc: Exception, *, base_url: str, stage: Stage, timeout: httpx.Timeout
) -> UpstreamError:
    """Map an httpx exception raised at `stage` of a request to an `UpstreamError`.

    `stage` is "request" before the response headers, "waiting" after them but
    before the first body byte, "streaming" once the body has started.
    """
    server = f"The model server at {base_url}"
    if isinstance(exc, httpx.ConnectTimeout):
        detail = (
            f"{server} did not accept a connection within {_secs(timeout.connect)}."
        )
        return UpstreamError("upstream_timeout", detail)
    if isinstance(exc, httpx.ReadTimeout) and stage == "streaming":
        detail = f"{server} stopped sending for {_secs(timeout.read)} mid-answer."
        return UpstreamError("upstream_timeout", detail)
    if isinstance(exc, httpx.ReadTimeout):
        detail = (
            f"{server} sent nothing for {_secs(timeout.read)}; the model may still "
            "be loading, so try again in a moment."
        )
        return UpstreamError("upstream_timeout", detail)
    if isinstance(exc, httpx.PoolTimeout):
        detail = f"Too many requests are open to the model server at {base_url}."
        return UpstreamError("upstream_busy", detail)
    if isinstance(exc, httpx.TimeoutException):
        detail = f"{server} did not take the request within {_secs(timeout.write)}."
        return UpstreamError("upstream_timeout", detail)
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        detail = f"{base_url} is not a valid model server address: {sentence(str(exc))}"
        return UpstreamError("upstream_unreachable", detail)
    if isinstance(exc, httpx.ConnectError):
        detail = f"{server} did not answer: {_connect_reason(exc)}."
        return UpstreamError("upstream_unreachable", detail)
    if isinstance(exc, httpx.DecodingError):
        detail = (
            f"{server} sent a reply that could not be decoded: {sentence(str(exc))}"
        )
        return UpstreamError("malformed", detail)
    if stage == "request":
        detail = f"{server} closed the connection without answering: {_reason(exc)}."
        return UpstreamError("upstream_unreachable", detail)
    detail = f"The connection to the model server at {base_url} broke mid-answer: "
    return UpstreamError("stream_cut", detail + _reason(exc) + ".")


def _kind_of_server(path: str) -> str:
    if path.startswith("/v1/"):
        return "an OpenAI-compatible server"
    return "an Ollama server"


def _secs(value: float | None) -> str:
    return "the time limit" if value is None else f"{value:g} s"


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().rstrip(".")
    return text[:1].lower() + text[1:] if text else type(exc).__name__


def _connect_reason(exc: BaseException) -> str:
    # httpx reports "All connection attempts failed"; the cause names the real fault.
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        if isinstance(seen, socket.gaierror):
            return "its host name could not be resolved"
        if isinstance(seen, OSError) and seen.errno is not None and seen.strerror:
            return seen.strerror[:1].lower() + seen.strerror[1:]
        seen = seen.__cause__ or seen.__context__
    return _reason(exc)
