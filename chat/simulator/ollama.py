"""Ollama's native API: the `/api/chat` stream, tool calls included
(`toolcalls`; the model endpoints, `/api/version|tags|show|ps`:
`ollama_models`)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from chat.simulator.config import (
    DEFAULT_NUM_CTX,
    RUNNER_STOPPED,
    THINK_LEVELS,
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
from chat.simulator.ollama_models import add_routes as add_model_routes
from chat.simulator.ollama_models import find_model, parse_keep_alive
from chat.simulator.received import received
from chat.simulator.state import STATE, ChatLogEntry, SimulatorState
from chat.simulator.toolcalls.choosing import Offer, Turn, plan_turn
from chat.simulator.toolcalls.dialects import (
    check_ollama_history,
    ollama_calls,
    ollama_offer,
)
from chat.simulator.wire import (
    Timing,
    dumps,
    error_response,
    json_response,
    prompt_tokens,
    read_json,
    record_sent,
    rfc3339,
    set_nodelay,
    sleep_until,
)


@dataclass
class ChatRequest:
    name: str  # the model name as sent
    model: SimModel
    messages: list[Any]
    stream: bool
    think: bool
    options: dict[str, Any]
    keep_alive_s: float
    offer: Offer


def _parse_think(value: Any) -> bool | str | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value in THINK_LEVELS:
            return value
        raise ApiError(
            400,
            f"invalid think value: {json.dumps(value)} "
            '(must be "high", "medium", "low", "max", true, or false)',
        )
    raise ApiError(
        400, 'think must be a boolean or string ("high", "medium", "low", "max")'
    )


def parse_chat(config: SimulatorConfig, body: Any) -> ChatRequest:
    if not isinstance(body, dict):
        raise ApiError(400, "json: cannot unmarshal request body into ChatRequest")
    think = _parse_think(body.get("think"))
    keep_alive_s = parse_keep_alive(body.get("keep_alive"))
    name = body.get("model")
    if not isinstance(name, str) or not name:
        raise ApiError(400, "model is required")
    messages = body.get("messages") or []
    options = body.get("options") or {}
    if not isinstance(messages, list) or not isinstance(options, dict):
        raise ApiError(400, "json: cannot unmarshal messages or options")
    model = find_model(config, name)
    if think not in (None, False) and not model.thinks:
        raise ApiError(400, f'"{name}" does not support thinking')
    offer = ollama_offer(body, model, name)
    check_ollama_history(messages)
    return ChatRequest(
        name=name,
        model=model,
        messages=messages,
        stream=body.get("stream") is not False,
        think=model.thinks if think is None else think is not False,
        options=options,
        keep_alive_s=keep_alive_s,
        offer=offer,
    )


async def _chat(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    timing = Timing(start_ns=time.perf_counter_ns())
    entry = ChatLogEntry(body=None, started=time.time())
    state.record(entry)
    try:
        entry.body = await read_json(request)
        chat = parse_chat(state.config, entry.body)
    except ApiError as exc:
        entry.status = exc.status
        entry.end(finished=True)
        return error_response(exc.status, exc.message)
    entry.model = chat.model.name
    entry.load_only = not chat.messages
    entry.received = received(chat.messages)
    faults = take_faults(state.config)
    if faults.status is not None:
        entry.status, entry.fault = faults.status, "status"
        entry.end(finished=True)
        return error_response(
            faults.status, status_text(faults.status, faults.status_message)
        )
    try:
        return await _serve_chat(request, state, chat, faults, entry, timing)
    except (ConnectionResetError, asyncio.CancelledError):
        # The client went away: stop generating at once, like Ollama.
        entry.disconnected = True
        entry.end(finished=False)
        raise


async def _serve_chat(
    request: web.Request,
    state: SimulatorState,
    chat: ChatRequest,
    faults: Faults,
    entry: ChatLogEntry,
    timing: Timing,
) -> web.StreamResponse:
    await state.load(chat.model, _num_ctx(chat))
    timing.loaded_ns = time.perf_counter_ns()
    try:
        if not chat.messages:
            return _load_only(chat, entry)
        config = state.config
        turn = plan_turn(config, chat.messages, chat.offer, think=chat.think)
        plan = _Plan.build(config, chat, turn)
        entry.thinking = bool(turn.script.thinking)
        if chat.stream:
            return await _stream(request, plan, faults, entry, timing)
        return await _respond_once(request, plan, faults, entry, timing)
    finally:
        state.touch(chat.model, chat.keep_alive_s)


def _num_ctx(chat: ChatRequest) -> int:
    value = chat.options.get("num_ctx")
    if is_number(value) and value > 0:
        return int(value)
    return min(DEFAULT_NUM_CTX, chat.model.context_length)


def _load_only(chat: ChatRequest, entry: ChatLogEntry) -> web.Response:
    # Ollama answers a load with c.JSON whatever "stream" says: one JSON
    # object, application/json, no trailing newline.
    reason = "unload" if chat.keep_alive_s <= 0 else "load"
    entry.done_reason = reason
    entry.end(finished=True)
    return json_response(
        {
            "model": chat.name,
            "created_at": rfc3339(),
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": reason,
        }
    )


@dataclass
class _Plan:
    """The chunks one chat request will send, ready to write."""

    name: str
    prompt_tokens: int
    tps: float
    burst: int
    ttft_s: float
    content_in_done: bool
    record_times: bool
    done_reason: str
    pieces: list[tuple[bytes, bytes]]  # (message prefix, JSON token or calls)
    # The token each piece leaves at: a tool call goes out whole once the
    # model has written its last token (chat/simulator/toolcalls/dialects.py).
    slots: list[int]
    generated: int  # tokens in all, those of a call cut short by num_predict too

    @classmethod
    def build(cls, config: SimulatorConfig, chat: ChatRequest, turn: Turn) -> _Plan:
        pieces = [(_THINK_MID, t) for t in turn.script.thinking_json]
        pieces += [(_CONTENT_MID, t) for t in turn.script.content_json]
        slots = list(range(len(pieces)))
        for spent, sent in ollama_calls(turn.calls):
            mid = _CONTENT_MID if isinstance(sent, str) else _TOOLS_MID
            pieces.append((mid, dumps(sent).encode()))
            slots.append((slots[-1] if slots else -1) + spent)
        limit = chat.options.get("num_predict")
        done_reason = "stop"
        generated = slots[-1] + 1 if slots else 0
        if is_number(limit) and 0 < limit < generated:
            done_reason, generated = "length", int(limit)
            pieces = pieces[: sum(1 for slot in slots if slot < limit)]
            slots = slots[: len(pieces)]
        return cls(
            name=chat.name,
            prompt_tokens=prompt_tokens(chat.messages),
            tps=config.tps,
            burst=max(1, config.burst),
            ttft_s=config.ttft_ms / 1000,
            content_in_done=config.content_in_done,
            record_times=config.record_times,
            done_reason=done_reason,
            pieces=pieces,
            slots=slots,
            generated=generated,
        )

    def tokens(self, pieces: int) -> int:
        """The tokens generated for the first `pieces` pieces."""
        if pieces == len(self.pieces):
            return self.generated
        return self.slots[pieces - 1] + 1 if pieces else 0

    def message(self) -> dict[str, Any]:
        """The whole message, for an answer not streamed."""
        message: dict[str, Any] = {"role": "assistant", "content": ""}
        for mid, token in self.pieces:
            field = _FIELDS[mid]
            message[field] = message.get(field, _EMPTY[field]) + json.loads(token)
        return message

    def metrics(self, timing: Timing, tokens: int) -> dict[str, Any]:
        """Ollama's done metrics in ns; zero values are omitted as Ollama does."""
        now = time.perf_counter_ns()
        tail = int(1e9 / self.tps) if self.tps > 0 else 0
        values = {
            "total_duration": now - timing.start_ns,
            "load_duration": timing.loaded_ns - timing.start_ns,
            "prompt_eval_count": self.prompt_tokens,
            "prompt_eval_duration": (timing.first_ns or now) - timing.loaded_ns,
            "eval_count": tokens,
            "eval_duration": max(1, timing.last_ns - timing.first_ns + tail)
            if tokens
            else 0,
        }
        return {k: v for k, v in values.items() if v}


_THINK_MID = b'","message":{"role":"assistant","content":"","thinking":'

_CONTENT_MID = b'","message":{"role":"assistant","content":'

_TOOLS_MID = b'","message":{"role":"assistant","content":"","tool_calls":'

_FIELDS = {_THINK_MID: "thinking", _CONTENT_MID: "content", _TOOLS_MID: "tool_calls"}

_EMPTY: dict[str, Any] = {"thinking": "", "content": "", "tool_calls": []}

_CHUNK_END = b'},"done":false}\n'


async def _stream(
    request: web.Request,
    plan: _Plan,
    faults: Faults,
    entry: ChatLogEntry,
    timing: Timing,
) -> web.StreamResponse:
    loop = asyncio.get_running_loop()
    t0 = loop.time() + plan.ttft_s
    await sleep_until(loop, t0)
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    set_nodelay(request)
    head = b'{"model":' + dumps(plan.name).encode() + b',"created_at":"'
    total = len(plan.pieces)
    in_stream = total - 1 if plan.content_in_done and _last_is_content(plan) else total
    interval = 1 / plan.tps if plan.tps > 0 else 0.0
    check_faults = faults.mid_stream
    burst: list[bytes] = []

    async def write_burst() -> None:
        await response.write(b"".join(burst))
        for _ in burst:
            record_sent(entry, timing, plan.record_times)
        burst.clear()

    for i in range(in_stream + 1):
        if interval and i < total:
            await sleep_until(loop, t0 + plan.slots[i] * interval)
        elif i % 64 == 63:
            await asyncio.sleep(0)  # let other streams and disconnects through
        if check_faults:
            if burst:
                await write_burst()
            if await _fault(request, response, plan, faults, entry, i, in_stream):
                return response
        if i == in_stream:
            break
        mid, token = plan.pieces[i]
        burst.append(b"".join((head, rfc3339().encode(), mid, token, _CHUNK_END)))
        if len(burst) == plan.burst:
            await write_burst()
    if burst:
        await write_burst()
    await _write_done(response, plan, entry, timing, in_stream < total)
    return response


def _last_is_content(plan: _Plan) -> bool:
    return bool(plan.pieces) and plan.pieces[-1][0] is _CONTENT_MID


async def _write_done(
    response: web.StreamResponse,
    plan: _Plan,
    entry: ChatLogEntry,
    timing: Timing,
    carries_last: bool,
) -> None:
    last = json.loads(plan.pieces[-1][1]) if carries_last else ""
    if carries_last:
        record_sent(entry, timing, plan.record_times)
    done = {
        "model": plan.name,
        "created_at": rfc3339(),
        "message": {"role": "assistant", "content": last},
        "done": True,
        "done_reason": plan.done_reason,
        **plan.metrics(timing, plan.tokens(entry.tokens_sent)),
    }
    await response.write(dumps(done).encode() + b"\n")
    await response.write_eof()
    entry.done_reason = plan.done_reason
    entry.end(finished=True)


async def _fault(
    request: web.Request,
    response: web.StreamResponse,
    plan: _Plan,
    faults: Faults,
    entry: ChatLogEntry,
    sent: int,
    last: int,
) -> bool:
    """Inject the fault due after ``sent`` tokens; True when the stream is over.

    A cut or error set beyond the last token happens instead of the done chunk.
    """
    if faults.cut_after is not None and sent == min(faults.cut_after, last):
        entry.fault = "cut"
        cut_connection(request)
        entry.end(finished=False)
        return True
    if faults.error_after is not None and sent == min(faults.error_after, last):
        entry.fault = "error"
        await response.write(dumps({"error": RUNNER_STOPPED}).encode() + b"\n")
        await response.write_eof()
        entry.end(finished=True)
        return True
    if faults.malformed_after is not None and sent == faults.malformed_after:
        entry.fault = "malformed"
        line = f'{{"model":{dumps(plan.name)},"created_at":"{rfc3339()}","mess\n'
        await response.write(line.encode())
    return False


async def _respond_once(
    request: web.Request,
    plan: _Plan,
    faults: Faults,
    entry: ChatLogEntry,
    timing: Timing,
) -> web.StreamResponse:
    loop = asyncio.get_running_loop()
    t0 = loop.time() + plan.ttft_s
    total = len(plan.pieces)
    cut = None if faults.cut_after is None else min(faults.cut_after, total)
    error = None if faults.error_after is None else min(faults.error_after, total)
    stop_at = min(n for n in (cut, error, total) if n is not None)
    last_token_at = (
        t0 + max(0, plan.tokens(stop_at) - 1) / plan.tps if plan.tps > 0 else t0
    )
    await sleep_until(loop, t0)
    timing.first_ns = time.perf_counter_ns()
    await sleep_until(loop, last_token_at)
    timing.last_ns = time.perf_counter_ns()
    entry.tokens_sent = stop_at
    if cut == stop_at:
        entry.fault = "cut"
        cut_connection(request)
        entry.end(finished=False)
        return web.Response()  # never reaches the client
    if error == stop_at:
        entry.fault, entry.status = "error", 500
        entry.end(finished=True)
        return error_response(500, RUNNER_STOPPED)
    entry.done_reason = plan.done_reason
    entry.end(finished=True)
    return json_response(
        {
            "model": plan.name,
            "created_at": rfc3339(),
            "message": plan.message(),
            "done": True,
            "done_reason": plan.done_reason,
            **plan.metrics(timing, plan.tokens(total)),
        }
    )


def add_routes(app: web.Application) -> None:
    add_model_routes(app)
    app.router.add_post("/api/chat", _chat)
