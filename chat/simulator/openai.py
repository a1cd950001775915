"""The OpenAI-compatible API: `/v1/models` and `/v1/chat/completions`.

Streamed answers are server-sent events, one token per event, paced like the
Ollama side: a role-only first chunk, then `delta.content` (and reasoning, see
`REASONING_STYLES`), a finish chunk with an empty delta, a usage chunk with
`"choices": []` when the request asks with `stream_options.include_usage`, and
`data: [DONE]`. With `timings` the last chunk carries llama.cpp's `timings`
(milliseconds). Thinking follows `chat_template_kwargs.enable_thinking`, then
Qwen3's `/think` and `/no_think` in the last user message (with the switch off
and inline tags, the answer opens with an empty `<think></think>` block, as
Qwen3 does). The faults are the Ollama side's, in this protocol's shapes: an
error status with an `{"error": {...}}` body, a cut, `data: {"error": ...}`
followed by `[DONE]`, one truncated event. Tool calls (`tools`, `tool_choice`):
`toolcalls`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from chat.simulator.config import (
    DEFAULT_KEEP_ALIVE_S,
    DEFAULT_NUM_CTX,
    REASONING_STYLES,
    RUNNER_STOPPED,
    TOOL_FORMATS,
    SimModel,
    SimulatorConfig,
    is_number,
)
from chat.simulator.faults import (
    ApiError,
    Faults,
    cut_connection,
    status_text,
    take_faults,
)
from chat.simulator.received import received
from chat.simulator.state import STATE, ChatLogEntry, SimulatorState
from chat.simulator.toolcalls.choosing import Offer, plan_turn
from chat.simulator.toolcalls.dialects import (
    check_openai_history,
    openai_calls,
    openai_message,
    openai_offer,
)
from chat.simulator.wire import (
    Timing,
    dumps,
    json_response,
    prompt_tokens,
    read_json,
    record_sent,
    set_nodelay,
    sleep_until,
)

CREATED = 1_760_000_000
CHUNK_ID = "chatcmpl-simulated"
# Inline tags are sent split in two, as tokenizers may: clients must join them.
OPEN_TAG = ("<th", "ink>\n")
CLOSE_TAG = ("\n</th", "ink>\n\n")
EMPTY_BLOCK = ("<think>\n\n</think>\n\n",)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/models", _models)
    app.router.add_post("/v1/chat/completions", _chat)


def error_body(status: int, message: str) -> dict[str, Any]:
    kind = {
        400: "invalid_request_error",
        404: "not_found_error",
        503: "unavailable_error",
    }.get(status, "api_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": status}}


def error_response(status: int, message: str) -> web.Response:
    return json_response(error_body(status, message), status)


async def _models(request: web.Request) -> web.Response:
    models = [
        {"id": m.name, "object": "model", "created": CREATED, "owned_by": "simulator"}
        for m in request.app[STATE].config.models
    ]
    return json_response({"object": "list", "data": models})


@dataclass
class CompletionRequest:
    model: SimModel
    name: str
    messages: list[Any]
    stream: bool
    think: bool
    soft_off: bool  # /no_think while the template's thinking is on
    reasoning: str
    include_usage: bool
    max_tokens: int | None
    offer: Offer
    tool_format: str  # one of TOOL_FORMATS


def parse_completion(config: SimulatorConfig, body: Any) -> CompletionRequest:
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    name = body.get("model")
    if not isinstance(name, str) or not name:
        raise ApiError(400, "model is required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages must be a non-empty list")
    model = _find(config, name)
    kwargs = body.get("chat_template_kwargs") or {}
    enabled = kwargs.get("enable_thinking") if isinstance(kwargs, dict) else None
    if enabled is True and not model.thinks:
        raise ApiError(400, f'"{name}" does not support thinking')
    switch = soft_switch(messages)
    think = model.thinks and enabled is not False and switch is not False
    reasoning = body.get("sim_reasoning", config.reasoning)
    if reasoning not in REASONING_STYLES:
        raise ApiError(400, f"sim_reasoning must be one of {REASONING_STYLES}")
    tool_format = body.get("sim_tool_format", config.tool_format)
    if tool_format not in TOOL_FORMATS:
        raise ApiError(400, f"sim_tool_format must be one of {TOOL_FORMATS}")
    offer = openai_offer(body)
    check_openai_history(messages)
    options = body.get("stream_options")
    limit = body.get("max_tokens", body.get("max_completion_tokens"))
    return CompletionRequest(
        model=model,
        name=name,
        messages=messages,
        stream=body.get("stream") is True,
        think=think,
        soft_off=model.thinks and enabled is not False and switch is False,
        reasoning=reasoning,
        include_usage=isinstance(options, dict)
        and options.get("include_usage") is True,
        max_tokens=int(limit) if is_number(limit) and limit > 0 else None,
        offer=offer,
        tool_format=tool_format,
    )


def _find(config: SimulatorConfig, name: str) -> SimModel:
    for model in config.models:
        if name in (model.name, model.name.removesuffix(":latest")):
            return model
    raise ApiError(404, f'model "{name}" not found, try pulling it first')


def soft_switch(messages: Sequence[Any]) -> bool | None:
    """Qwen3's soft switch: the last user message's `/think` or `/no_think`."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            words = str(message.get("content", "")).split()
            for word in reversed(words):
                if word in ("/no_think", "/nothink"):
                    return False
                if word == "/think":
                    return True
            return None
    return None


@dataclass
class _Plan:
    """The deltas of one answer: (field, text) pairs, one token each."""

    name: str
    deltas: list[tuple[str, Any]]  # a delta's field and value
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


def plan_answer(config: SimulatorConfig, chat: CompletionRequest) -> _Plan:
    turn = plan_turn(config, chat.messages, chat.offer, think=chat.think)
    script = turn.script
    thinking, content = list(script.thinking), list(script.content)
    finish = "stop"
    if chat.max_tokens is not None and chat.max_tokens < len(thinking) + len(content):
        finish = "length"
        content = content[: max(0, chat.max_tokens - len(thinking))]
        thinking = thinking[: chat.max_tokens]
    tokens = len(thinking) + len(content)
    deltas: list[tuple[str, Any]]
    style = chat.reasoning
    if style in ("reasoning_content", "reasoning"):
        deltas = [(style, t) for t in thinking]
    elif not thinking:
        deltas = [("content", t) for t in EMPTY_BLOCK] if chat.soft_off else []
    else:
        opening = OPEN_TAG if style == "tags" else ()
        pieces = [*opening, *thinking, *CLOSE_TAG]
        deltas = [("content", t) for t in pieces]
    deltas += [("content", t) for t in content]
    calls, ends = openai_calls(turn.calls, chat.tool_format)
    room = len(calls) if chat.max_tokens is None else max(0, chat.max_tokens - tokens)
    if calls and finish == "stop":
        finish = ends if room >= len(calls) else "length"
        deltas += calls[:room]
        tokens += len(calls[:room])
    return _Plan(chat.name, deltas, finish, prompt_tokens(chat.messages), tokens)


async def _chat(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    timing = Timing(start_ns=time.perf_counter_ns())
    entry = ChatLogEntry(body=None, started=time.time(), protocol="openai")
    state.record(entry)
    try:
        entry.body = await read_json(request)
        chat = parse_completion(state.config, entry.body)
    except ApiError as exc:
        entry.status = exc.status
        entry.end(finished=True)
        return error_response(exc.status, exc.message)
    entry.model = chat.model.name
    entry.received = received(chat.messages)
    faults = take_faults(state.config)
    if faults.status is not None:
        entry.status, entry.fault = faults.status, "status"
        entry.end(finished=True)
        message = status_text(faults.status, faults.status_message)
        return error_response(faults.status, message)
    plan = plan_answer(state.config, chat)
    entry.thinking = chat.think
    try:
        # The model loads as on the Ollama side (``load_ms`` when cold), with
        # the server's default context and keep-alive: this API sets neither.
        await state.load(chat.model, min(DEFAULT_NUM_CTX, chat.model.context_length))
        timing.loaded_ns = time.perf_counter_ns()
        try:
            if chat.stream:
                return await _stream(request, state, chat, plan, faults, entry, timing)
            return await _respond_once(state, chat, plan, faults, entry, timing)
        finally:
            state.touch(chat.model, DEFAULT_KEEP_ALIVE_S)
    except (ConnectionResetError, asyncio.CancelledError):
        entry.disconnected = True
        entry.end(finished=False)
        raise


def _event(obj: Any) -> bytes:
    return b"data: " + dumps(obj).encode() + b"\n\n"


def _chunk(name: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return _event(
        {
            "id": CHUNK_ID,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": name,
            "choices": [choice],
        }
    )


async def _stream(
    request: web.Request,
    state: SimulatorState,
    chat: CompletionRequest,
    plan: _Plan,
    faults: Faults,
    entry: ChatLogEntry,
    timing: Timing,
) -> web.StreamResponse:
    config = state.config
    loop = asyncio.get_running_loop()
    ping = b": ping\n\n" if config.sse_ping else b""
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    response.enable_chunked_encoding()
    await response.prepare(request)
    set_nodelay(request)
    if ping:
        await response.write(ping)  # while the prompt is read, as llama.cpp does
    t0 = loop.time() + config.ttft_ms / 1000
    await sleep_until(loop, t0)
    await response.write(_chunk(plan.name, {"role": "assistant", "content": ""}))
    total = len(plan.deltas)
    interval = 1 / config.tps if config.tps > 0 else 0.0
    for i in range(total + 1):
        if interval and i < total:
            await sleep_until(loop, t0 + i * interval)
        elif i % 64 == 63:
            await asyncio.sleep(0)  # let other streams and disconnects through
        if faults.mid_stream and await _fault(
            request, response, faults, entry, i, total
        ):
            return response
        if i == total:
            break
        field, token = plan.deltas[i]
        await response.write(ping + _chunk(plan.name, {field: token}))
        record_sent(entry, timing, config.record_times)
    await response.write(b"".join(_ending(config, chat, plan, timing)))
    await response.write_eof()
    entry.done_reason = plan.finish_reason
    entry.end(finished=True)
    return response


def _ending(
    config: SimulatorConfig, chat: CompletionRequest, plan: _Plan, timing: Timing
) -> list[bytes]:
    """The finish chunk, the usage chunk when asked, `timings` on the last, [DONE]."""
    finish: dict[str, Any] = {
        "id": CHUNK_ID,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": plan.name,
        "choices": [{"index": 0, "delta": {}, "finish_reason": plan.finish_reason}],
    }
    chunks = [finish]
    if chat.include_usage:
        chunks.append({**finish, "choices": [], "usage": _usage(plan)})
    if config.timings:
        chunks[-1]["timings"] = _timings(plan, timing, config)
    return [*(_event(c) for c in chunks), b"data: [DONE]\n\n"]


def _usage(plan: _Plan) -> dict[str, int]:
    return {
        "prompt_tokens": plan.prompt_tokens,
        "completion_tokens": plan.completion_tokens,
        "total_tokens": plan.prompt_tokens + plan.completion_tokens,
    }


def _timings(plan: _Plan, timing: Timing, config: SimulatorConfig) -> dict[str, Any]:
    """llama.cpp's figures, in milliseconds, from this request's clock."""
    now = time.perf_counter_ns()
    tail = 1000 / config.tps if config.tps > 0 else 0.0
    prompt_ms = ((timing.first_ns or now) - timing.loaded_ns) / 1e6
    predicted_ms = (timing.last_ns - timing.first_ns) / 1e6 + tail
    n = plan.completion_tokens
    return {
        "prompt_n": plan.prompt_tokens,
        "prompt_ms": round(prompt_ms, 3),
        "predicted_n": n,
        "predicted_ms": round(predicted_ms, 3),
        "predicted_per_second": round(n / predicted_ms * 1000, 3)
        if predicted_ms
        else 0.0,
    }


async def _fault(
    request: web.Request,
    response: web.StreamResponse,
    faults: Faults,
    entry: ChatLogEntry,
    sent: int,
    last: int,
) -> bool:
    """Inject the fault due after ``sent`` tokens; True when the stream is over.

    A cut or error set beyond the last token happens instead of the finish.
    """
    if faults.cut_after is not None and sent == min(faults.cut_after, last):
        entry.fault = "cut"
        cut_connection(request)
        entry.end(finished=False)
        return True
    if faults.error_after is not None and sent == min(faults.error_after, last):
        entry.fault = "error"
        await response.write(_event(error_body(500, RUNNER_STOPPED)))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        entry.end(finished=True)
        return True
    if faults.malformed_after is not None and sent == faults.malformed_after:
        entry.fault = "malformed"
        await response.write(b'data: {"id":"' + CHUNK_ID.encode() + b'","obj\n\n')
    return False


async def _respond_once(
    state: SimulatorState,
    chat: CompletionRequest,
    plan: _Plan,
    faults: Faults,
    entry: ChatLogEntry,
    timing: Timing,
) -> web.Response:
    config = state.config
    loop = asyncio.get_running_loop()
    await sleep_until(loop, loop.time() + config.ttft_ms / 1000)
    timing.first_ns = time.perf_counter_ns()
    if config.tps > 0 and plan.deltas:
        await asyncio.sleep((len(plan.deltas) - 1) / config.tps)
    timing.last_ns = time.perf_counter_ns()
    entry.tokens_sent = len(plan.deltas)
    if faults.error_after is not None or faults.cut_after is not None:
        entry.fault, entry.status = "error", 500
        entry.end(finished=True)
        return error_response(500, RUNNER_STOPPED)
    message = openai_message(plan.deltas)
    body: dict[str, Any] = {
        "id": CHUNK_ID,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": plan.name,
        "choices": [
            {"index": 0, "message": message, "finish_reason": plan.finish_reason}
        ],
        "usage": _usage(plan),
    }
    if config.timings:
        body["timings"] = _timings(plan, timing, config)
    entry.done_reason = plan.finish_reason
    entry.end(finished=True)
    return json_response(body)


def decode_events(body: bytes) -> list[Any]:
    """The JSON of each `data:` event of a whole SSE body (`[DONE]` as a string),
    for tests and tools."""
    events: list[Any] = []
    for block in body.decode().split("\n\n"):
        data = [line[6:] for line in block.split("\n") if line.startswith("data: ")]
        if data:
            text = "\n".join(data)
            events.append(text if text == "[DONE]" else json.loads(text))
    return events
