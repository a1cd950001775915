"""OpenAI-compatible endpoints: `GET /v1/models`, `POST /v1/chat/completions`
(server-sent events or one JSON object). Thinking comes apart from the answer,
in `reasoning_content`, as vLLM, SGLang and llama.cpp send it."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponseBase, JsonResponse

from chat.api import endpoint, requests
from chat.api.answers import ApiAnswer, CallMade, CallPiece
from chat.models import ApiKey, ModelProfile

SSE_KEEPALIVE = b": keep-alive\n\n"
SSE_DONE = b"data: [DONE]\n\n"


@endpoint.api_view("openai", ("GET",))
async def models(request: HttpRequest, api_key: ApiKey) -> HttpResponseBase:
    profiles = await endpoint.usable_profiles(api_key)
    created = int(time.time())
    return JsonResponse(
        {"object": "list", "data": [_model(p, created) for p in profiles]}
    )


def _model(profile: ModelProfile, created: int) -> dict[str, Any]:
    return {
        "id": profile.tag,
        "object": "model",
        "created": created,
        "owned_by": "chatsite",
        # The context the site sends the model with (vLLM calls it max_model_len).
        "context_length": profile.context_length,
        "max_model_len": profile.context_length,
    }


@endpoint.api_view("openai", ("POST",))
async def chat_completions(request: HttpRequest, api_key: ApiKey) -> HttpResponseBase:
    chat = requests.openai_chat(endpoint.body_of(request))
    answer = await endpoint.begin(request, api_key, chat)
    created = int(time.time())
    if not chat.stream:
        return JsonResponse(_completion(await endpoint.finished(answer), created))
    await endpoint.opened(answer, wait_for_text=False)
    events = _events(answer, created, include_usage=chat.include_usage)
    return endpoint.streaming(events, "text/event-stream")


def _completion(answer: ApiAnswer, created: int) -> dict[str, Any]:
    """The whole answer, as one `chat.completion` object."""
    thinking, content = answer.take()
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking:
        message["reasoning_content"] = thinking
    if answer.calls:
        message["content"] = content or None  # as OpenAI sends a call alone
        message["tool_calls"] = [_call(call) for call in answer.calls]
    return {
        "id": f"chatcmpl-{answer.message_id}",
        "object": "chat.completion",
        "created": created,
        "model": answer.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _finish_reason(answer),
            }
        ],
        "usage": _usage(answer),
    }


async def _events(
    answer: ApiAnswer, created: int, *, include_usage: bool
) -> AsyncIterator[bytes]:
    """The answer as `chat.completion.chunk` events: one per update, written
    the moment it arrives (docs/latency.md, rule 1)."""
    head = (
        f'{{"id":"chatcmpl-{answer.message_id}","object":"chat.completion.chunk",'
        f'"created":{created},"model":{json.dumps(answer.model)},'
        '"system_fingerprint":null,'
    ).encode()

    def chunk(choices: list[dict[str, Any]], **more: Any) -> bytes:
        # orjson: one chunk per token, 0.6 µs where `json.dumps` made it 4.7.
        rest = orjson.dumps({"choices": choices, **more})
        return b"data: " + head + rest[1:] + b"\n\n"

    def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}

    first = True
    async for keepalive in endpoint.updates(answer, SSE_KEEPALIVE):
        if keepalive is not None:
            yield keepalive
            continue
        thinking, content = answer.take()
        pieces = answer.take_calls()
        if first or thinking or content or pieces:
            delta: dict[str, Any] = {"role": "assistant"} if first else {}
            first = False
            if thinking:
                delta["reasoning_content"] = thinking
            if content or not pieces:
                delta["content"] = content
            if pieces:
                delta["tool_calls"] = [_call_piece(piece) for piece in pieces]
            yield chunk([choice(delta)])
    if answer.error is not None:
        # Past the first token the status is sent: the fault goes in the
        # stream, in the error object's shape (the openai client raises it).
        yield b"data: " + json.dumps(answer.error.openai_body()).encode() + b"\n\n"
    else:
        yield chunk([choice({}, _finish_reason(answer))])
        if include_usage:
            yield chunk([], usage=_usage(answer))
    yield SSE_DONE


def _call(call: CallMade) -> dict[str, Any]:
    """A whole tool call, its arguments the JSON text the model wrote (valid
    or not: OpenAI's clients parse it)."""
    function = {"name": call.name, "arguments": call.arguments_text()}
    return {"id": call.id, "type": "function", "function": function}


def _call_piece(piece: CallPiece) -> dict[str, Any]:
    """A streamed piece of a call: its id and name first, then its arguments
    piece by piece, each under the call's index."""
    if not piece.first:
        return {"index": piece.call.index, "function": {"arguments": piece.arguments}}
    function = {"name": piece.call.name, "arguments": piece.arguments}
    return {
        "index": piece.call.index,
        "id": piece.call.id,
        "type": "function",
        "function": function,
    }


def _finish_reason(answer: ApiAnswer) -> str:
    if answer.stats().get("done_reason") == "length":
        return "length"  # cut at the token limit, even in the middle of a call
    return "tool_calls" if answer.calls else "stop"


def _usage(answer: ApiAnswer) -> dict[str, int]:
    prompt, output = answer.usage()
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
    }
