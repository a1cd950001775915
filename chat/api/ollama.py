"""Ollama-compatible endpoints: `GET /api/tags`, `POST /api/show`,
`POST /api/chat` (NDJSON lines or one JSON object), `GET /api/version`, so any
Ollama client can point at the site instead of at the model box."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import orjson
from channels.db import database_sync_to_async
from django.http import HttpRequest, HttpResponseBase, JsonResponse

from chat.api import endpoint, requests
from chat.api.answers import ApiAnswer, CallMade, find_profile
from chat.api.errors import ApiError
from chat.models import ApiKey, ModelProfile

# The Ollama API this speaks: thinking apart (`think`, `message.thinking`) came
# with 0.9, and 0.12.4 made thinking the default for thinking models, which is
# how `think` left out is read here too.
OLLAMA_VERSION = "0.12.6"
NS_PER_MS = 1_000_000


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@endpoint.api_view("ollama", ("GET", "HEAD"))
async def version(request: HttpRequest, api_key: ApiKey) -> HttpResponseBase:
    return JsonResponse({"version": OLLAMA_VERSION})


@endpoint.api_view("ollama", ("GET", "HEAD"))
async def tags(request: HttpRequest, api_key: ApiKey) -> HttpResponseBase:
    profiles = await endpoint.usable_profiles(api_key)
    return JsonResponse({"models": [_tag(p) for p in profiles]})


def _details(profile: ModelProfile) -> dict[str, Any]:
    return {
        "parent_model": "",
        "format": "gguf",
        "family": profile.family,
        "families": [profile.family] if profile.family else None,
        "parameter_size": profile.parameter_size,
        "quantization_level": profile.quantization,
    }


def _tag(profile: ModelProfile) -> dict[str, Any]:
    return {
        "name": profile.tag,
        "model": profile.tag,
        "modified_at": _now(),
        "size": 0,  # the model box knows; the site does not
        "digest": hashlib.sha256(profile.tag.encode()).hexdigest(),
        "details": _details(profile),
    }


@endpoint.api_view("ollama", ("POST",))
async def show(request: HttpRequest, api_key: ApiKey) -> HttpResponseBase:
    data = endpoint.body_of(request)
    name = requests.model_name(data.get("model") or data.get("name"))
    profile = await database_sync_to_async(find_profile)(api_key, name)
    capabilities = ["completion"]
    if profile.supports_thinking:
        capabilities.append("thinking")
    family = profile.family or "unknown"
    return JsonResponse(
        {
            "modelfile": "",
            "parameters": _parameters(profile),
            "template": "",
            "details": _details(profile),
            "model_info": {
                "general.architecture": family,
                f"{family}.context_length": profile.context_length,
            },
            "capabilities": capabilities,
            "modified_at": _now(),
        }
    )


def _parameters(profile: ModelProfile) -> str:
    """The profile's options, one "name value" a line, as Ollama shows them."""
    lines = [f"num_ctx {profile.context_length}"]
    for name, value in profile.options.items():
        values = value if isinstance(value, list) else [value]
        lines.extend(f"{name} {json.dumps(v)}" for v in values)
    return "\n".join(lines)


@endpoint.api_view("ollama", ("POST",))
async def chat(request: HttpRequest, api_key: ApiKey) -> HttpResponseBase:
    chat = requests.ollama_chat(endpoint.body_of(request))
    answer = await endpoint.begin(request, api_key, chat)
    if not chat.stream:
        return JsonResponse(_whole(await endpoint.finished(answer)))
    # Ollama itself sends nothing until the first token (a model loading, a
    # request waiting for a slot): neither does this.
    await endpoint.opened(answer, wait_for_text=True)
    return endpoint.streaming(_lines(answer), "application/x-ndjson")


def _whole(answer: ApiAnswer) -> dict[str, Any]:
    """The whole answer as one object (ApiError 502 for a malformed call)."""
    thinking, content = answer.take()
    final = _final(answer, content, thinking)
    if answer.calls:
        final["message"]["tool_calls"] = _calls(answer.whole_calls())
    return final


async def _lines(answer: ApiAnswer) -> AsyncIterator[bytes]:
    head = b'{"model":' + orjson.dumps(answer.model) + b',"created_at":"'
    async for _ in endpoint.updates(answer, b""):
        thinking, content = answer.take()
        whole = answer.whole_calls()
        if thinking or content or whole:
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if thinking:
                message["thinking"] = thinking
            if whole:
                try:
                    message["tool_calls"] = _calls(whole)
                except ApiError as error:
                    yield json.dumps(error.ollama_body()).encode() + b"\n"
                    return
            # orjson: one line per token, 0.3 µs where `json.dumps` made it 3.1.
            line = orjson.dumps(message)
            yield head + _now().encode() + b'","message":' + line + b',"done":false}\n'
    if answer.error is not None:
        # Past the first line the status is sent: Ollama says a fault in the
        # stream as {"error": ...}, which its clients raise.
        yield json.dumps(answer.error.ollama_body()).encode() + b"\n"
    else:
        yield json.dumps(_final(answer, "", "")).encode() + b"\n"


def _calls(calls: list[CallMade]) -> list[dict[str, Any]]:
    """Whole tool calls as Ollama gives them, their arguments an object; a
    call whose arguments are not a JSON object is the model server's fault
    (ApiError 502, `malformed_tool_call`): Ollama's clients take only an
    object, and a call cut or mangled is not one to run."""
    return [
        {
            "id": call.id,
            "function": {
                "index": call.index,
                "name": call.name,
                "arguments": _arguments(call),
            },
        }
        for call in calls
    ]


def _arguments(call: CallMade) -> dict[str, Any]:
    text = call.arguments_text()
    try:
        arguments = json.loads(text) if text.strip() else {}
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        shown = text if len(text) <= 200 else text[:199] + "…"
        raise ApiError(
            502,
            "malformed_tool_call",
            f"The model called {call.name} with arguments that are not a JSON "
            f"object: {shown}",
        )
    return arguments


def _final(answer: ApiAnswer, content: str, thinking: str) -> dict[str, Any]:
    """The last object: the answer's figures in Ollama's names and units."""
    stats = answer.stats()
    prompt, output = answer.usage()
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking:
        message["thinking"] = thinking

    def ns(name: str) -> int:
        value = stats.get(name)
        return int(value * NS_PER_MS) if value else 0

    return {
        "model": answer.model,
        "created_at": _now(),
        "message": message,
        "done": True,
        # A reply with tool calls ends as Ollama's do: "stop".
        "done_reason": _done_reason(stats.get("done_reason")),
        "total_duration": ns("total_ms"),
        "load_duration": ns("load_ms"),
        "prompt_eval_count": prompt,
        "prompt_eval_duration": ns("prompt_eval_ms"),
        "eval_count": output,
        "eval_duration": ns("eval_ms"),
    }


def _done_reason(reason: str | None) -> str:
    return "stop" if reason in (None, "", "tool_calls") else reason
