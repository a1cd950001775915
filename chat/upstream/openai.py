"""OpenAI-compatible servers: the `/v1/chat/completions` SSE stream.

vLLM, llama.cpp's `llama-server`, LM Studio, SGLang and Ollama's `/v1` speak it
(see `docs/model-servers.md` section 2). `OpenAIClient.chat` has the
interface of `OllamaClient.chat`: it yields, per network read, the `Event`s
decoded from it and raises `UpstreamError` with the same codes for the same
faults, so the relay does not care which backend runs.

Reasoning comes from `delta.reasoning_content` (llama.cpp, SGLang, LM Studio,
older vLLM) or `delta.reasoning` (newer vLLM, Ollama `/v1`), or inline in the
content as `<think>...</think>` (see `thinktags`). The server's own figures come
from `usage` (asked for with `stream_options.include_usage`) and llama.cpp's
`timings`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from chat.upstream.events import (
    Delta,
    Event,
    Finished,
    UpstreamError,
    ended_early,
    error_for_status,
    error_for_transport,
    error_text,
    sentence,
    server_message,
)
from chat.upstream.lines import json_value
from chat.upstream.outgoing import soft_switched, with_content_parts
from chat.upstream.retry import retry_after
from chat.upstream.sse import SSEDecoder
from chat.upstream.streaming import HTTP_ERRORS, stream_events
from chat.upstream.thinktags import ThinkTagSplitter
from chat.upstream.toolcalls import ToolCalls
from chat.upstream.tooltags import ToolTagSplitter

logger = logging.getLogger("chat.upstream")

PATH = "/v1/chat/completions"

# A compressing proxy would hold tokens back until its buffer fills.
_HEADERS = {"Accept-Encoding": "identity", "Accept": "text/event-stream"}

# Ollama option names (the profile's own form) -> the OpenAI body's names.
# `num_ctx` has no OpenAI equivalent: the server's context is set at its start.
_OPTION_NAMES = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "min_p": "min_p",
    "seed": "seed",
    "stop": "stop",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "repeat_penalty": "repeat_penalty",
    "num_predict": "max_tokens",
}


def openai_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Return a profile's (Ollama-named) options as OpenAI body fields."""
    fields: dict[str, Any] = {}
    for name, value in options.items():
        field = _OPTION_NAMES.get(name)
        if field is None or value is None:
            continue
        if field == "max_tokens" and (not isinstance(value, int) or value <= 0):
            continue  # Ollama's -1 (unlimited) is the OpenAI default
        fields[field] = value
    return fields


@dataclass(frozen=True, slots=True)
class ThinkingControl:
    """How a profile turns thinking on and off, and reads inline tags."""

    template_kwargs: bool = True  # chat_template_kwargs.enable_thinking
    soft_switch: bool = False  # Qwen3's /think and /no_think
    parse_tags: bool = True  # split <think>...</think> out of the content
    opened: bool = False  # the output may only close the tag


class OpenAIClient:
    """A client for one OpenAI-compatible server, over a shared `httpx.AsyncClient`."""

    def __init__(
        self,
        base_url: str,
        *,
        http: httpx.AsyncClient,
        thinking: ThinkingControl | None = None,
    ) -> None:
        base = base_url.rstrip("/")
        # Accept the address with or without the `/v1` the OpenAI SDKs want.
        self.base_url = base[: -len("/v1")] if base.endswith("/v1") else base
        self.thinking = thinking or ThinkingControl()
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

        The list holding `Finished` is the last. A busy server (503, 429) is asked
        again after a pause while nothing was yielded yet (see `retry`). Use
        `contextlib.aclosing`: closing the generator closes the request, which
        is how the server learns to stop. `keep_alive` is Ollama's and ignored.
        `asked` is called once the request is written (see `retry`).
        `tools` and `tool_choice` go to the server as they are, and the calls
        come as `ToolCallDelta`s, streamed or inline (see `toolcalls`).

        Raises `UpstreamError`, also after some events were yielded.
        """
        body = self.request_body(
            model,
            messages,
            think=think,
            options=options,
            tools=tools,
            tool_choice=tool_choice,
        )
        calls = ToolCalls() if tools else None
        return stream_events(
            self._http,
            self.base_url + PATH,
            body,
            _HEADERS,
            lambda response: self._status_error(response, model, think),
            StreamReader(self.base_url, self._splitter(think, calls), calls),
            self.base_url,
            asked,
        )

    async def models(self) -> list[dict[str, Any]]:
        """Return the served models (`/v1/models` entries); raises `UpstreamError`."""
        path = "/v1/models"
        try:
            response = await self._http.get(self.base_url + path, headers=_HEADERS)
        except HTTP_ERRORS as exc:
            timeout = self._http.timeout
            raise error_for_transport(
                exc, base_url=self.base_url, stage="request", timeout=timeout
            ) from exc
        if response.status_code != 200:
            message = server_message(response.content, response.reason_phrase)
            raise error_for_status(
                response.status_code,
                message,
                base_url=self.base_url,
                path=path,
                model=None,
            )
        try:
            data = response.json()
        except ValueError:
            data = None
        models = data.get("data") if isinstance(data, dict) else None
        if not isinstance(models, list):
            detail = (
                f"The model server at {self.base_url} answered {path} with something "
                "other than an OpenAI-compatible model list. Check the address and "
                "the profile's backend."
            )
            raise UpstreamError("malformed", detail)
        return [entry for entry in models if isinstance(entry, dict)]

    def request_body(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        think: bool | None,
        options: Mapping[str, Any],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        control = self.thinking
        if think is not None and control.soft_switch:
            messages = soft_switched(messages, think)
        body: dict[str, Any] = {
            "model": model,
            "messages": [with_content_parts(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            **openai_options(options),
        }
        if think is not None and control.template_kwargs:
            body["chat_template_kwargs"] = {"enable_thinking": think}
        if tools:
            body["tools"] = tools
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        return body

    def _splitter(
        self, think: bool | None, calls: ToolCalls | None
    ) -> ThinkTagSplitter | ToolTagSplitter | None:
        """What splits the content: `<think>` tags as the profile says, and
        `<tool_call>` tags when tools were offered (a server without a tool
        parser leaves them in the text)."""
        control = self.thinking
        tags = None
        if control.parse_tags:
            tags = ThinkTagSplitter(opened=control.opened and think is not False)
        return tags if calls is None else ToolTagSplitter(calls, tags)

    async def _status_error(
        self, response: httpx.Response, model: str, think: bool | None
    ) -> UpstreamError:
        message = server_message(await response.aread(), response.reason_phrase)
        status = response.status_code
        if (
            status == 400
            and think is not None
            and _about_thinking(message)
            and "does not support thinking" not in message
        ):
            # vLLM and llama.cpp word this their own way; Ollama's text is mapped
            # by `error_for_status` itself.
            message = f'"{model}" does not support thinking ({message})'
        error = error_for_status(
            status, message, base_url=self.base_url, path=PATH, model=model
        )
        if error.code == "thinking_unsupported" and "chat_template_kwargs" in message:
            error.detail += (
                " If the server takes no chat_template_kwargs at all, an admin can "
                'set the model profile\'s thinking switch to "Nothing".'
            )
        error.retry_after = retry_after(response.headers.get("Retry-After"))
        return error


def _about_thinking(message: str) -> bool:
    text = message.lower()
    return (
        "enable_thinking" in text
        or "chat_template_kwargs" in text
        or ("thinking" in text and "support" in text)
    )


class StreamReader:
    """The decoding state of one streamed answer: SSE events to `Event`s.

    An event that is not JSON is skipped with a warning (one bad line should
    not cost the user the answer); if the body ends and none was JSON, the
    server does not speak this protocol: "malformed".
    """

    def __init__(
        self,
        base_url: str,
        splitter: ThinkTagSplitter | ToolTagSplitter | None,
        calls: ToolCalls | None = None,
    ) -> None:
        self.base_url = base_url
        self.splitter = splitter
        # The reply's tool calls, when tools were offered.
        self.calls = calls
        self.decoder = SSEDecoder()
        self.finished = False
        self.parsed = 0
        self.malformed = 0
        self.finish_reason = ""
        self.usage: dict[str, Any] = {}
        self.timings: dict[str, Any] = {}

    def feed(self, data: bytes) -> tuple[list[Event], UpstreamError | None]:
        """Return the events of one read and an error to raise after them."""
        events: list[Event] = []
        try:
            for payload in self.decoder.feed(data):
                self._event(payload, events)
                if self.finished:
                    break
        except UpstreamError as error:
            # Text before the error in the same read still reaches the user.
            return events, error
        return events, None

    def close(self) -> tuple[list[Event], UpstreamError | None]:
        """Return the events of the end of the body, and the error to raise."""
        events: list[Event] = []
        try:
            for payload in self.decoder.close():
                self._event(payload, events)
        except UpstreamError as error:
            return events, error
        if self.finished:
            return events, None
        if self.finish_reason:
            # Some servers end without `[DONE]` after the finish chunk.
            self._finish(events)
            return events, None
        return events, ended_early(
            self.base_url,
            parsed=self.parsed,
            malformed=self.malformed,
            wire="the OpenAI-compatible format (no event was JSON)",
            hint="Check the address and the profile's backend.",
        )

    def _event(self, payload: str, events: list[Event]) -> None:
        if payload.strip() == "[DONE]":
            self._finish(events)
            return
        try:
            chunk = json_value(payload)
        except (ValueError, RecursionError):
            chunk = None
        if chunk is None and "\n" in payload:
            # A server that leaves out the blank line between events: each
            # `data:` line is an event of its own.
            for line in payload.split("\n"):
                self._event(line, events)
            return
        if not isinstance(chunk, dict):
            self._skip(payload)
            return
        self.parsed += 1
        error = chunk.get("error")
        if error or chunk.get("object") == "error":
            said = sentence(error_text(error or chunk))
            detail = "The model server reported an error while answering: " + said
            raise UpstreamError("upstream_error", detail)
        choices = chunk.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            self._choice(choices[0], events)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        timings = chunk.get("timings")
        if isinstance(timings, dict):
            self.timings = timings

    def _choice(self, choice: dict[str, Any], events: list[Event]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning and isinstance(reasoning, str):
                if self.splitter is not None:
                    self.splitter.server_separates()
                events.append(Delta("thinking", reasoning))
            content = delta.get("content")
            if content and isinstance(content, str):
                if self.splitter is None:
                    events.append(Delta("content", content))
                else:
                    events.extend(self.splitter.feed(content))
            if self.calls is not None:
                self.calls.openai(delta.get("tool_calls"), events)
        reason = choice.get("finish_reason")
        if reason and isinstance(reason, str):
            self.finish_reason = reason

    def _finish(self, events: list[Event]) -> None:
        if self.splitter is not None:
            events.extend(self.splitter.close())
        if self.calls is None:
            events.append(self.figures())
        else:
            self.calls.close(events)
            events.append(self.calls.finished(self.figures()))
        self.finished = True

    def figures(self) -> Finished:
        """The server's numbers: llama.cpp's `timings` first, then `usage`."""
        timings, usage = self.timings, self.usage
        prompt_ms = _number(timings.get("prompt_ms"))
        eval_ms = _number(timings.get("predicted_ms"))
        return Finished(
            done_reason=self.finish_reason,
            prompt_tokens=_first(usage.get("prompt_tokens"), timings.get("prompt_n")),
            prompt_eval_ms=prompt_ms,
            output_tokens=_first(
                usage.get("completion_tokens"), timings.get("predicted_n")
            ),
            eval_ms=eval_ms,
            total_ms=None
            if prompt_ms is None or eval_ms is None
            else prompt_ms + eval_ms,
        )

    def _skip(self, payload: str) -> None:
        self.malformed += 1
        # A wrong URL can answer with a whole page: log once, not per event.
        log = logger.warning if self.malformed == 1 else logger.debug
        log("Skipped a non-JSON event from the model server: %r", payload[:200])


def _first(*values: object) -> int | None:
    """The first value that is a token count."""
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None
