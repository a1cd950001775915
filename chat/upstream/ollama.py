"""Ollama's native API: the `/api/chat` NDJSON stream and the model endpoints.

`OllamaClient.chat` yields, per network read, the `Event`s decoded from it, so
the relay can forward each read the moment it arrives; every failure surfaces as
an `UpstreamError` (see `events`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import httpx

from chat.upstream.events import (
    Delta,
    Event,
    Finished,
    Stage,
    UpstreamError,
    ended_early,
    error_for_status,
    error_for_transport,
    error_text,
    sentence,
    server_message,
)
from chat.upstream.lines import complete_lines, json_value
from chat.upstream.outgoing import ollama_messages
from chat.upstream.retry import retry_after
from chat.upstream.streaming import HTTP_ERRORS, stream_events
from chat.upstream.toolcalls import ToolCalls
from chat.upstream.tooltags import ToolTagSplitter

logger = logging.getLogger("chat.upstream")

# Ollama's own client allows 8 MiB lines; beyond this a server is misbehaving.
MAX_LINE_BYTES = 64 * 1024 * 1024

# A compressing proxy would hold tokens back until its buffer fills.
_HEADERS = {"Accept-Encoding": "identity"}


class NDJSONDecoder:
    """Split a byte stream into JSON objects, one per `\\n`-terminated line.

    Only complete lines are decoded, so a UTF-8 character split across reads is
    fine. Blank lines are ignored; a line that is not a JSON object is skipped
    and counted in `malformed` (the first one is logged as a warning).
    """

    __slots__ = ("_buffer", "_max_line", "parsed", "malformed")

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._buffer = bytearray()
        self._max_line = max_line
        self.parsed = 0
        self.malformed = 0

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Return the objects of the lines that `data` completes; keep the rest.

        Raises `UpstreamError("malformed")` if a line grows past `max_line`.
        """
        lines = complete_lines(self._buffer, data)
        if self._buffer:
            self._check_size()
        return self._parse(lines) if lines else []

    def close(self) -> list[dict[str, Any]]:
        """Return the object of a last line that had no `\\n`, if any."""
        line = bytes(self._buffer)
        self._buffer.clear()
        return self._parse([line])

    def _parse(self, lines: list[bytes]) -> list[dict[str, Any]]:
        objects: list[dict[str, Any]] = []
        for line in lines:
            if not line or line.isspace():
                continue
            try:
                value = json_value(line)
            except (ValueError, RecursionError):
                value = None
            if isinstance(value, dict):
                objects.append(value)
            else:
                self._skip(line)
        self.parsed += len(objects)
        return objects

    def _skip(self, line: bytes) -> None:
        self.malformed += 1
        # A wrong URL can answer with a whole HTML page: log once, not per line.
        log = logger.warning if self.malformed == 1 else logger.debug
        log("Skipped a line from the model server that is not JSON: %r", line[:200])

    def _check_size(self) -> None:
        if len(self._buffer) > self._max_line:
            limit = self._max_line // (1024 * 1024)
            detail = f"The model server sent a line longer than {limit} MiB."
            raise UpstreamError("malformed", detail)


def events_from_chunk(chunk: dict[str, Any]) -> list[Event]:
    """Return the events of one `/api/chat` chunk: thinking, content, `Finished`.

    Raises `UpstreamError("upstream_error")` for an `{"error": ...}` line.
    """
    events: list[Event] = []
    _add_events(chunk, events)
    return events


def _add_events(
    chunk: dict[str, Any], events: list[Event], tools: ToolTagSplitter | None = None
) -> bool:
    """Append the events of `chunk` to `events`; return whether it was the last.

    `tools` reads the calls of a reply that was offered tools: Ollama's own
    (`message.tool_calls`, whole calls) and any inline `<tool_call>` tag its
    parser left in the text."""
    error = chunk.get("error")
    if error:
        detail = "The model server reported an error while answering: "
        raise UpstreamError("upstream_error", detail + sentence(error_text(error)))
    message = chunk.get("message")
    if isinstance(message, dict):
        thinking = message.get("thinking")
        if thinking and isinstance(thinking, str):
            events.append(Delta("thinking", thinking))
        content = message.get("content")
        if content and isinstance(content, str):
            if tools is None:
                events.append(Delta("content", content))
            else:
                events += tools.feed(content)
        if tools is not None:
            tools.calls.ollama(message.get("tool_calls"), events)
    # The done chunk may carry the last piece of text: it was appended above.
    if chunk.get("done") is True:
        if tools is None:
            events.append(_finished(chunk))
        else:
            events += tools.close()
            tools.calls.close(events)
            # Ollama says "stop" after calls too.
            events.append(tools.calls.finished(_finished(chunk)))
        return True
    return False


def _finished(chunk: dict[str, Any]) -> Finished:
    reason = chunk.get("done_reason")
    return Finished(
        done_reason=reason if isinstance(reason, str) else "",
        prompt_tokens=_count(chunk.get("prompt_eval_count")),
        prompt_eval_ms=_ms(chunk.get("prompt_eval_duration")),
        output_tokens=_count(chunk.get("eval_count")),
        eval_ms=_ms(chunk.get("eval_duration")),
        load_ms=_ms(chunk.get("load_duration")),
        total_ms=_ms(chunk.get("total_duration")),
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ms(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value / 1_000_000
    return None


def _decode(
    chunks: list[dict[str, Any]], tools: ToolTagSplitter | None
) -> tuple[list[Event], bool, UpstreamError | None]:
    """Return the events of one read, whether it finished, and an error line."""
    events: list[Event] = []
    for chunk in chunks:
        try:
            if _add_events(chunk, events, tools):
                return events, True, None
        except UpstreamError as error:
            # Text before the error line in the same read still reaches the user.
            return events, False, error
    return events, False, None


class NDJSONReader:
    """The decoding state of one `/api/chat` body (see `streaming.BodyReader`)."""

    def __init__(self, base_url: str, tools: ToolTagSplitter | None = None) -> None:
        self.base_url = base_url
        self.decoder = NDJSONDecoder()
        self.tools = tools
        self.finished = False

    def feed(self, data: bytes) -> tuple[list[Event], UpstreamError | None]:
        events, self.finished, error = _decode(self.decoder.feed(data), self.tools)
        return events, error

    def close(self) -> tuple[list[Event], UpstreamError | None]:
        """The events of an unterminated last line and the error to raise."""
        events, self.finished, error = _decode(self.decoder.close(), self.tools)
        if error is not None or self.finished:
            return events, error
        return events, ended_early(
            self.base_url,
            parsed=self.decoder.parsed,
            malformed=self.decoder.malformed,
            wire="Ollama's format (no line was JSON)",
            hint="Check that the address points at an Ollama server.",
        )


@dataclass(frozen=True, slots=True)
class ModelFacts:
    supports_thinking: bool
    supports_vision: bool
    supports_tools: bool
    context_length: int | None
    family: str
    parameter_size: str
    quantization: str


def model_facts(show: dict[str, Any]) -> ModelFacts:
    """Return what a chat needs to know about a model from its `/api/show` body."""
    info = show.get("model_info")
    info = info if isinstance(info, dict) else {}
    details = show.get("details")
    details = details if isinstance(details, dict) else {}
    capabilities = show.get("capabilities")
    capabilities = capabilities if isinstance(capabilities, list) else []
    context = info.get(f"{info.get('general.architecture')}.context_length")
    return ModelFacts(
        supports_thinking="thinking" in capabilities,
        supports_vision="vision" in capabilities,
        supports_tools="tools" in capabilities,
        context_length=_count(context),
        family=str(details.get("family") or ""),
        parameter_size=str(details.get("parameter_size") or ""),
        quantization=str(details.get("quantization_level") or ""),
    )


class OllamaClient:
    """A thin client for one Ollama server, over a shared `httpx.AsyncClient`."""

    def __init__(self, base_url: str, *, http: httpx.AsyncClient) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = http

    def chat(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        think: bool | None,
        options: dict[str, Any],
        keep_alive: str | int | None = None,
        asked: Callable[[], None] | None = None,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> AsyncGenerator[list[Event], None]:
        """Stream an answer: yield, per network read, the non-empty list of its events.

        The list holding `Finished` is the last. Resuming after it only waits for
        the end of the body (Ollama sends it at once) so that the connection goes
        back to the pool; stopping there, or at any point, closes the request and
        Ollama stops generating. Use `contextlib.aclosing` so that happens at once.

        A busy server (503, 429) is asked again after a pause, before anything
        was yielded (see `retry`).

        A line that is not JSON is skipped with a warning, as one bad line should
        not cost the user a whole answer; but if the body ends and no line at all
        was JSON, the server is not speaking this protocol: "malformed".

        `asked` is called once the request is written (see `retry`).

        `tools` (OpenAI's function form, which Ollama takes) are offered to the
        model, and its calls come as `ToolCallDelta`s (see `toolcalls`).
        Ollama has no `tool_choice`: "none" offers no tools, any other is left
        to the model. `messages` are in the internal (OpenAI) shape.

        Raises `UpstreamError`, also after some events were yielded.
        """
        offered = tools if tool_choice != "none" else None
        body = _chat_body(model, ollama_messages(messages), think, options, keep_alive)
        if offered:
            body["tools"] = offered
        return stream_events(
            self._http,
            self.base_url + "/api/chat",
            body,
            _HEADERS,
            lambda response: self._status_error(response, "/api/chat", model),
            NDJSONReader(
                self.base_url, ToolTagSplitter(ToolCalls(), None) if offered else None
            ),
            self.base_url,
            asked,
        )

    async def version(self) -> str:
        """Return the server's version string; raises `UpstreamError`."""
        data = await self._get_json("GET", "/api/version")
        version = data.get("version")
        if not isinstance(version, str):
            raise self._malformed("/api/version")
        return version

    async def tags(self) -> list[dict[str, Any]]:
        """Return the installed models (`/api/tags` entries); raises `UpstreamError`."""
        data = await self._get_json("GET", "/api/tags")
        models = data.get("models")
        if not isinstance(models, list):
            raise self._malformed("/api/tags")
        return [entry for entry in models if isinstance(entry, dict)]

    async def ps(self) -> list[dict[str, Any]]:
        """Return the models in memory (`/api/ps` entries); raises `UpstreamError`."""
        data = await self._get_json("GET", "/api/ps")
        models = data.get("models")
        if not isinstance(models, list):
            raise self._malformed("/api/ps")
        return [entry for entry in models if isinstance(entry, dict)]

    async def show(self, model: str) -> dict[str, Any]:
        """Return the raw `/api/show` body for `model`; raises `UpstreamError`."""
        return await self._get_json("POST", "/api/show", {"model": model}, model)

    async def load(
        self,
        model: str,
        keep_alive: str | int | None = None,
        *,
        options: dict[str, Any] | None = None,
    ) -> None:
        """Load `model` into memory (a chat with no messages); raises `UpstreamError`.

        Pass the chat's `options`: a different `num_ctx` makes Ollama load again.
        """
        stream = self.chat(
            model, [], think=None, options=options or {}, keep_alive=keep_alive
        )
        async with aclosing(stream) as batches:
            async for _ in batches:
                pass

    async def _get_json(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        model: str | None = None,
    ) -> dict[str, Any]:
        """Return the JSON object answered to a plain request; raise `UpstreamError`."""
        try:
            response = await self._http.request(
                method, self.base_url + path, json=body, headers=_HEADERS
            )
        except HTTP_ERRORS as exc:
            raise self._transport_error(exc, "request") from exc
        if response.status_code != 200:
            raise await self._status_error(response, path, model)
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise self._malformed(path)
        return data

    async def _status_error(
        self, response: httpx.Response, path: str, model: str | None
    ) -> UpstreamError:
        message = server_message(await response.aread(), response.reason_phrase)
        error = error_for_status(
            response.status_code,
            message,
            base_url=self.base_url,
            path=path,
            model=model,
        )
        error.retry_after = retry_after(response.headers.get("Retry-After"))
        return error

    def _transport_error(self, exc: Exception, stage: Stage) -> UpstreamError:
        timeout = self._http.timeout
        return error_for_transport(
            exc, base_url=self.base_url, stage=stage, timeout=timeout
        )

    def _malformed(self, path: str) -> UpstreamError:
        detail = (
            f"The model server at {self.base_url} answered {path} with something "
            "other than Ollama's JSON. Check that the address points at an "
            "Ollama server."
        )
        return UpstreamError("malformed", detail)


def _chat_body(
    model: str,
    messages: list[dict[str, Any]],
    think: bool | None,
    options: dict[str, Any],
    keep_alive: str | int | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "stream": True,
        "options": options,
    }
    # Omitting `think` turns thinking on for thinking models (Ollama >= 0.12.4).
    if think is not None:
        body["think"] = think
    if keep_alive is not None:
        body["keep_alive"] = keep_alive
    return body
