from __future__ import annotations

import pytest

from chat.discovery import fetch_ollama_models, sync_profiles
from chat.models import ModelProfile
from chat.upstream import UpstreamError


async def test_fetch_reads_tags_and_capabilities(simulator):
    models = await fetch_ollama_models(simulator.url)
    assert models == [
        {"tag": "qwen3-demo:8b", "supports_thinking": True, "context_length": 40960},
        {"tag": "llama-demo:3b", "supports_thinking": False, "context_length": 8192},
    ]


async def test_fetch_from_a_dead_server_raises_a_clear_error():
    with pytest.raises(UpstreamError) as caught:
        await fetch_ollama_models("http://127.0.0.1:9")
    assert caught.value.code == "upstream_unreachable"
    assert "127.0.0.1:9" in caught.value.detail


@pytest.mark.django_db
def test_sync_creates_profiles_and_keeps_admin_edits():
    found = [{"tag": "qwen3:8b", "supports_thinking": True, "context_length": 40960}]
    (profile,) = sync_profiles("http://box:11434", found)
    assert profile.supports_thinking and profile.context_length == 8192
    profile.display_name, profile.context_length, profile.enabled = "Qwen", 16384, False
    profile.save()
    found[0]["supports_thinking"] = False
    sync_profiles("http://box:11434", found)
    profile.refresh_from_db()
    assert profile.display_name == "Qwen" and profile.context_length == 16384
    assert not profile.enabled and not profile.supports_thinking
    assert ModelProfile.objects.count() == 1
