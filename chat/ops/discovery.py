"""Reading a model server's models into model profiles.

Ollama: `/api/tags` lists the models and `/api/show` tells each one's family,
size, quantization, context length and capabilities (thinking, vision, tools).
OpenAI-compatible servers: `/v1/models` lists the models; vLLM adds the context
length (`max_model_len`), llama.cpp's `llama-server` its trained context
(`meta.n_ctx_train`); nothing there says whether a model thinks, sees or calls
tools (an admin says, for the last two).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx
from asgiref.sync import async_to_sync

from chat.models import ModelProfile
from chat.upstream import OllamaClient, OpenAIClient, UpstreamError, model_facts

# Discovery runs from the admin: a dead server must not hang the page.
TIMEOUT = httpx.Timeout(10, connect=2)
# A sensible window for a new profile, not the trained maximum (which can need
# far more memory than the box has); admins raise it per profile.
NEW_PROFILE_CONTEXT = 8192

Found = dict[str, object]


async def fetch_models(backend: str, base_url: str) -> list[Found]:
    """The models of the server at `base_url` speaking `backend`; raises
    UpstreamError when the server cannot be read."""
    if backend == ModelProfile.Backend.OPENAI:
        return await fetch_openai_models(base_url)
    return await fetch_ollama_models(base_url)


async def fetch_ollama_models(base_url: str) -> list[Found]:
    """Each model the server has, with the facts a profile needs; raises
    UpstreamError when the server cannot be read."""
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        client = OllamaClient(base_url, http=http)
        found: list[Found] = []
        for entry in await client.tags():
            tag = str(entry["name"])
            facts = model_facts(await client.show(tag))
            found.append(
                {
                    "tag": tag,
                    "supports_thinking": facts.supports_thinking,
                    "supports_vision": facts.supports_vision,
                    "supports_tools": facts.supports_tools,
                    "context_length": facts.context_length,
                    "family": facts.family,
                    "parameter_size": facts.parameter_size,
                    "quantization": facts.quantization,
                }
            )
        return found


async def fetch_openai_models(base_url: str) -> list[Found]:
    """The models `/v1/models` lists; raises UpstreamError when it cannot be read.

    `base_url` may end in `/v1`, as OpenAI clients are often configured."""
    async with httpx.AsyncClient(timeout=TIMEOUT, trust_env=False) as http:
        entries = await OpenAIClient(base_url, http=http).models()
    return [
        _openai_model(entry) for entry in entries if isinstance(entry.get("id"), str)
    ]


def _openai_model(entry: dict[str, Any]) -> Found:
    meta = entry.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    context = entry.get("max_model_len") or meta.get("n_ctx_train")
    return {
        "tag": entry["id"],
        "supports_thinking": False,
        "context_length": context if isinstance(context, int) else None,
        "family": "",
        "parameter_size": _parameter_size(meta.get("n_params")),
        "quantization": "",
    }


def _parameter_size(count: object) -> str:
    """`135M`, `8.0B` (Ollama's style) from a parameter count, if there is one."""
    if not isinstance(count, int) or count <= 0:
        return ""
    if count >= 1_000_000_000:
        return f"{count / 1_000_000_000:.1f}B"
    return f"{round(count / 1_000_000)}M"


def sync_profiles(
    base_url: str,
    models: list[Found],
    *,
    backend: str = ModelProfile.Backend.OLLAMA,
    is_demo: bool = False,
) -> list[ModelProfile]:
    """Create or update one profile per model; admins' own edits (names,
    defaults, options, enabled, context window) are kept."""
    profiles = []
    for model in models:
        profile, created = ModelProfile.objects.get_or_create(
            base_url=base_url,
            tag=str(model["tag"]),
            defaults={"is_demo": is_demo, "backend": backend},
        )
        profile.supports_thinking = bool(model["supports_thinking"])
        # An OpenAI-compatible server does not say: its admin's settings stay.
        for capability in ("supports_vision", "supports_tools"):
            if (value := model.get(capability)) is not None:
                setattr(profile, capability, bool(value))
        context_length = model.get("context_length")
        if created and isinstance(context_length, int):
            profile.context_length = min(context_length, NEW_PROFILE_CONTEXT)
        for name in ("family", "parameter_size", "quantization"):
            value = model.get(name)
            if value:
                setattr(profile, name, str(value))
        profile.is_demo = is_demo
        profile.save()
        profiles.append(profile)
    return profiles


@dataclass(frozen=True)
class Refreshed:
    """What one server's refresh did: the profiles it holds now, or why not."""

    base_url: str
    backend: str
    profiles: list[ModelProfile]
    error: UpstreamError | None = None


def refresh_servers(servers: Iterable[tuple[str, str]]) -> list[Refreshed]:
    """Read each (base URL, backend) server's models into profiles. A server
    that cannot be read is reported, and its profiles are left as they were."""
    results = []
    for base_url, backend in dict.fromkeys(servers):
        try:
            models = async_to_sync(fetch_models)(backend, base_url)
        except UpstreamError as exc:
            results.append(Refreshed(base_url, backend, [], exc))
            continue
        is_demo = ModelProfile.objects.filter(base_url=base_url, is_demo=True).exists()
        profiles = sync_profiles(base_url, models, backend=backend, is_demo=is_demo)
        results.append(Refreshed(base_url, backend, profiles))
    return results
