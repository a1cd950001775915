"""Reading a model server's models into model profiles."""

from __future__ import annotations

import httpx

from chat.models import ModelProfile
from chat.upstream import OllamaClient, model_facts


async def fetch_ollama_models(base_url: str) -> list[dict[str, object]]:
    """Each model the server has, with the facts a profile needs; raises
    UpstreamError when the server cannot be read."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(10, connect=2)) as http:
        client = OllamaClient(base_url, http=http)
        found = []
        for entry in await client.tags():
            tag = str(entry["name"])
            facts = model_facts(await client.show(tag))
            found.append(
                {
                    "tag": tag,
                    "supports_thinking": facts.supports_thinking,
                    "context_length": facts.context_length,
                }
            )
        return found


def sync_profiles(
    base_url: str, models: list[dict[str, object]], *, is_demo: bool = False
) -> list[ModelProfile]:
    """Create or update one profile per model; admins' own edits (names,
    defaults, options, enabled) are kept."""
    profiles = []
    for model in models:
        profile, created = ModelProfile.objects.get_or_create(
            base_url=base_url, tag=str(model["tag"]), defaults={"is_demo": is_demo}
        )
        profile.supports_thinking = bool(model["supports_thinking"])
        context_length = model.get("context_length")
        if created and isinstance(context_length, int):
            # A sensible window, not the trained maximum (which can need far
            # more memory than the box has); admins raise it per profile.
            profile.context_length = min(context_length, 8192)
        profile.is_demo = is_demo
        profile.save()
        profiles.append(profile)
    return profiles
