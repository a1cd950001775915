from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from django.contrib.messages import get_messages
from django.urls import reverse

from chat.models import ModelProfile
from chat.ops.discovery import (
    fetch_models,
    fetch_ollama_models,
    fetch_openai_models,
    sync_profiles,
)
from chat.upstream import UpstreamError

DEAD = "http://127.0.0.1:9"

# What vLLM and llama.cpp's llama-server answer on /v1/models (trimmed).
VLLM_MODELS = {
    "object": "list",
    "data": [
        {
            "id": "Qwen/Qwen3-8B",
            "object": "model",
            "owned_by": "vllm",
            "max_model_len": 32768,
        }
    ],
}
LLAMA_SERVER_MODELS = {
    "object": "list",
    "data": [
        {
            "id": "smollm2",
            "object": "model",
            "owned_by": "llamacpp",
            "meta": {"n_ctx_train": 8192, "n_params": 134515008},
        },
        {"object": "model"},  # no id: not a model we can ask for
    ],
}


async def serve(body: object, status: int = 200) -> AsyncIterator[str]:
    """A server answering `body` on /v1/models; with None, a server without it."""

    async def models(request: web.Request) -> web.Response:
        return web.json_response(body, status=status)

    app = web.Application()
    if body is not None:
        app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_fetch_reads_tags_and_capabilities(simulator):
    models = await fetch_ollama_models(simulator.url)
    assert models == [
        {
            "tag": "qwen3-demo:8b",
            "supports_thinking": True,
            "supports_vision": True,
            "supports_tools": True,
            "context_length": 40960,
            "family": "qwen3",
            "parameter_size": "8.2B",
            "quantization": "Q4_K_M",
        },
        {
            "tag": "llama-demo:3b",
            "supports_thinking": False,
            "supports_vision": False,
            "supports_tools": False,
            "context_length": 8192,
            "family": "llama",
            "parameter_size": "3.2B",
            "quantization": "Q4_K_M",
        },
    ]


async def test_fetch_from_a_dead_server_raises_a_clear_error():
    with pytest.raises(UpstreamError) as caught:
        await fetch_ollama_models(DEAD)
    assert caught.value.code == "upstream_unreachable"
    assert "127.0.0.1:9" in caught.value.detail


async def test_openai_models_come_with_the_context_a_server_reports():
    async for url in serve(VLLM_MODELS):
        (model,) = await fetch_models(ModelProfile.Backend.OPENAI, url + "/")
    assert model == {
        "tag": "Qwen/Qwen3-8B",
        "supports_thinking": False,
        "context_length": 32768,
        "family": "",
        "parameter_size": "",
        "quantization": "",
    }
    async for url in serve(LLAMA_SERVER_MODELS):
        models = await fetch_openai_models(url + "/v1")  # as OpenAI clients take it
    assert [(m["tag"], m["context_length"], m["parameter_size"]) for m in models] == [
        ("smollm2", 8192, "135M")
    ]


async def test_openai_discovery_of_a_server_without_v1_models_says_so():
    async for url in serve(None):
        with pytest.raises(UpstreamError) as caught:
            await fetch_openai_models(url)
    assert caught.value.status == 404
    assert "has no /v1/models (HTTP 404)" in caught.value.detail
    assert "OpenAI-compatible server" in caught.value.detail


async def test_openai_discovery_errors_are_clear():
    with pytest.raises(UpstreamError) as caught:
        await fetch_openai_models(DEAD)
    assert caught.value.code == "upstream_unreachable"
    async for url in serve({"object": "list"}):
        with pytest.raises(UpstreamError) as caught:
            await fetch_openai_models(url)
    assert caught.value.code == "malformed"
    assert "model list" in caught.value.detail
    async for url in serve({"error": {"message": "bad key"}}, status=401):
        with pytest.raises(UpstreamError) as caught:
            await fetch_openai_models(url)
    assert caught.value.code == "bad_request"
    assert "HTTP 401" in caught.value.detail and "bad key" in caught.value.detail


@pytest.mark.django_db
def test_sync_creates_profiles_and_keeps_admin_edits():
    found: list[dict[str, object]] = [
        {"tag": "qwen3:8b", "supports_thinking": True, "context_length": 40960}
    ]
    (profile,) = sync_profiles("http://box:11434", found)
    assert profile.supports_thinking and profile.context_length == 8192
    profile.display_name, profile.context_length, profile.enabled = "Qwen", 16384, False
    profile.save()
    found[0].update(supports_thinking=False, family="qwen3", quantization="Q8_0")
    sync_profiles("http://box:11434", found)
    profile.refresh_from_db()
    assert profile.display_name == "Qwen" and profile.context_length == 16384
    assert not profile.enabled and not profile.supports_thinking
    assert (profile.family, profile.quantization) == ("qwen3", "Q8_0")
    assert ModelProfile.objects.count() == 1


@pytest.mark.django_db
def test_sync_gives_new_openai_profiles_their_backend():
    found: list[dict[str, object]] = [
        {"tag": "smollm2", "supports_thinking": False, "context_length": None}
    ]
    (profile,) = sync_profiles(
        "http://box:8000", found, backend=ModelProfile.Backend.OPENAI
    )
    assert profile.backend == ModelProfile.Backend.OPENAI
    assert profile.context_length == 4096  # the field's default: none reported


def admin_messages(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.mark.django_db
def test_refresh_action_updates_profiles_of_the_selected_servers(
    admin_client, demo_profile, simulator
):
    dead = ModelProfile.objects.create(tag="gone:1b", base_url=DEAD)
    demo_profile.supports_thinking = demo_profile.supports_tools = False
    demo_profile.save()
    response = admin_client.post(
        reverse("admin:chat_modelprofile_changelist"),
        {
            "action": "refresh_from_server",
            "_selected_action": [demo_profile.pk, dead.pk],
        },
        follow=True,
    )
    assert response.status_code == 200
    said = admin_messages(response)
    assert any(
        m.startswith(f"Models at {simulator.url}: 2 profiles up to date") for m in said
    )
    assert any(
        m.startswith(f"Models at {DEAD} could not be read, so its profiles are")
        and "connection refused" in m
        for m in said
    )
    demo_profile.refresh_from_db()
    assert demo_profile.supports_thinking and demo_profile.family == "qwen3"
    assert demo_profile.supports_tools  # its server lists "tools"
    llama = ModelProfile.objects.get(base_url=simulator.url, tag="llama-demo:3b")
    assert llama.is_demo and llama.parameter_size == "3.2B"
    dead.refresh_from_db()
    assert dead.family == "" and ModelProfile.objects.filter(base_url=DEAD).count() == 1


@pytest.mark.django_db
def test_discover_page_reads_a_server_into_profiles(admin_client, simulator):
    url = reverse("admin:chat_modelprofile_discover")
    assert "Discover models at URL" in admin_client.get(url).content.decode()
    changelist = admin_client.get(reverse("admin:chat_modelprofile_changelist"))
    assert url in changelist.content.decode()

    response = admin_client.post(url, {"base_url": simulator.url, "backend": "ollama"})
    assert response.status_code == 302
    assert set(ModelProfile.objects.values_list("tag", flat=True)) == {
        "qwen3-demo:8b",
        "llama-demo:3b",
    }
    # Vision and tools from Ollama's capabilities.
    vision = dict(ModelProfile.objects.values_list("tag", "supports_vision"))
    assert vision == {"qwen3-demo:8b": True, "llama-demo:3b": False}
    tools = dict(ModelProfile.objects.values_list("tag", "supports_tools"))
    assert tools == {"qwen3-demo:8b": True, "llama-demo:3b": False}
    # Thinking with tools is off until an admin turns it on.
    assert not ModelProfile.objects.filter(think_with_tools=True).exists()


@pytest.mark.django_db
def test_discover_page_reads_an_openai_compatible_server(admin_client, simulator):
    url = reverse("admin:chat_modelprofile_discover")
    response = admin_client.post(url, {"base_url": simulator.url, "backend": "openai"})
    assert response.status_code == 302
    profiles = ModelProfile.objects.filter(backend=ModelProfile.Backend.OPENAI)
    assert sorted(profiles.values_list("tag", flat=True)) == [
        "llama-demo:3b",
        "qwen3-demo:8b",
    ]
    # An OpenAI-compatible server does not say: the admin's settings are kept.
    assert not any(p.supports_vision or p.supports_tools for p in profiles)
    profiles.filter(tag="llama-demo:3b").update(supports_vision=True)
    profiles.filter(tag="qwen3-demo:8b").update(supports_tools=True)
    admin_client.post(url, {"base_url": simulator.url, "backend": "openai"})
    assert profiles.get(tag="llama-demo:3b").supports_vision
    assert profiles.get(tag="qwen3-demo:8b").supports_tools
    assert not profiles.get(tag="llama-demo:3b").supports_tools


@pytest.mark.django_db
def test_discover_page_keeps_the_form_when_the_server_fails(admin_client):
    url = reverse("admin:chat_modelprofile_discover")
    response = admin_client.post(url, {"base_url": DEAD, "backend": "openai"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "could not be read" in page and "connection refused" in page
    assert 'value="http://127.0.0.1:9"' in page  # the form keeps what was typed
    assert not ModelProfile.objects.exists()


def test_discover_page_is_for_staff_only(client):
    response = client.get(reverse("admin:chat_modelprofile_discover"))
    assert response.status_code == 302 and "/login/" in response.url


@pytest.mark.django_db
def test_discovering_a_server_without_models_says_so(admin_client, simulator):
    simulator.config.models = []
    response = admin_client.post(
        reverse("admin:chat_modelprofile_discover"),
        {"base_url": simulator.url, "backend": "ollama"},
        follow=True,
    )
    assert admin_messages(response) == [
        f"The model server at {simulator.url} has no models."
    ]
    assert not ModelProfile.objects.exists()
