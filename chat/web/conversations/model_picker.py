"""The composer's model picker: the models the user may use (rendered with the
page, from the profiles' own facts: size, quantization, thinking, vision), and
which of them the model server holds in memory, fetched by the menu when it
opens (never while the page renders) from the admin status panel's probe
(chat/live/engine/server_status.py), cached briefly for everyone."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from chat.live.engine.server_status import server_statuses
from chat.models import ModelProfile

# Loaded models change when a model loads or its keep-alive ends: a few seconds
# stale is fine, and one probe serves every menu opened meanwhile.
LOADED_CACHE_KEY = "chat.model-picker.loaded"
LOADED_CACHE_SECONDS = 10


def picker_models(user: Any) -> list[ModelProfile]:
    return list(ModelProfile.objects.usable_by(user).order_by("display_name", "tag"))


async def _loaded_by_server() -> dict[str, list[str]]:
    loaded = await cache.aget(LOADED_CACHE_KEY)
    if loaded is None:
        loaded = {
            server.url: [model.name for model in server.loaded]
            for server in await server_statuses()
        }
        await cache.aset(LOADED_CACHE_KEY, loaded, LOADED_CACHE_SECONDS)
    return dict(loaded)


@require_GET
@login_required
async def loaded_models(request: HttpRequest) -> JsonResponse:
    """The ids of the user's models that their server holds in memory."""
    loaded = await _loaded_by_server()
    ids = [
        profile.pk
        async for profile in ModelProfile.objects.usable_by(await request.auser())
        if profile.tag in loaded.get(profile.base_url.rstrip("/"), [])
    ]
    return JsonResponse({"loaded": ids})
