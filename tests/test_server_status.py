"""The model-server status panel: probes, loaded models, streams across processes."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
from django.test import AsyncClient
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Message, ModelProfile
from chat.server_status import server_statuses
from chat.upstream import aclose_all, ollama_client

# The statuses read the database from another thread: rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

PANEL = reverse("admin_model_servers_panel")


@pytest.fixture(autouse=True)
async def fresh_pool():
    yield
    await aclose_all()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def panel(user) -> str:
    client = AsyncClient()
    await client.aforce_login(user)
    response = await client.get(PANEL)
    assert response.status_code == 200
    return response.content.decode()


async def test_reachable_server_shows_version_and_loaded_models(
    demo_profile, simulator, admin_user
):
    await ollama_client(simulator.url).load(demo_profile.tag, options={"num_ctx": 4096})
    [status] = await server_statuses()
    assert status.reachable and status.url == simulator.url
    assert status.version == simulator.config.version
    assert status.tags == [demo_profile.tag]
    [loaded] = status.loaded
    assert (loaded.name, loaded.context_length) == (demo_profile.tag, 4096)
    assert loaded.size_vram == loaded.size > 0 and not loaded.offloaded
    assert loaded.expires_at is not None and loaded.expires_at > timezone.now()

    html = await panel(admin_user)
    assert "Reachable" in html and simulator.config.version in html
    assert f'<th scope="row">{demo_profile.tag}</th>' in html
    assert "4096" in html and "GB" in html
    assert "in 4" in html  # unloads in 4 minutes (and seconds): Ollama's 5 m default


async def test_no_loaded_model_is_said(demo_profile, simulator, admin_user):
    html = await panel(admin_user)
    assert "Reachable" in html and "No model is loaded." in html


async def test_unreachable_server_is_reported_with_the_reason(demo_profile, admin_user):
    url = f"http://127.0.0.1:{closed_port()}"
    await ModelProfile.objects.acreate(tag="gone:7b", base_url=url)
    statuses = {s.url: s for s in await server_statuses()}
    assert statuses[demo_profile.base_url].reachable
    gone = statuses[url]
    assert not gone.reachable and gone.error and gone.loaded == []

    html = await panel(admin_user)
    assert "Unreachable" in html and url in html
    assert gone.error.split(":")[0] in html


async def test_openai_compatible_server_is_probed_on_v1_models(simulator, admin_user):
    # The simulator speaks Ollama only: /v1/models answers 404.
    await ModelProfile.objects.acreate(
        tag="m", base_url=simulator.url, backend=ModelProfile.Backend.OPENAI
    )
    [status] = await server_statuses()
    assert not status.reachable and "/v1/models answered HTTP 404" in status.error
    assert status.loaded == []


async def test_disabled_profiles_are_not_probed(demo_profile):
    await ModelProfile.objects.acreate(
        tag="off:1b", base_url=f"http://127.0.0.1:{closed_port()}", enabled=False
    )
    assert [s.url for s in await server_statuses()] == [demo_profile.base_url]


async def test_streams_are_counted_from_the_database(
    demo_profile, simulator, alice, admin_user
):
    """Answers streaming in any process count: 400 characters (~100 tokens)
    checkpointed 2 s after the answer began is ~50 tok/s."""
    conversation = await Conversation.objects.acreate(
        owner=alice, model_profile=demo_profile
    )
    message = await Message.objects.acreate(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        status=Message.Status.STREAMING,
        content="x" * 300,
        thinking="y" * 100,
    )
    began = timezone.now() - timedelta(seconds=10)
    await Message.objects.filter(pk=message.pk).aupdate(
        created_at=began, updated_at=began + timedelta(seconds=2)
    )
    # Finished answers do not count.
    await Message.objects.acreate(
        conversation=conversation, role=Message.Role.ASSISTANT, content="z" * 999
    )
    [status] = await server_statuses()
    assert status.streams == 1
    assert status.tokens_per_second == pytest.approx(50.0)

    html = await panel(admin_user)
    assert '<span class="streams">1</span> answer,' in html
    assert '<span class="rate">50.0</span> tok/s' in html


async def test_page_polls_the_panel(admin_user):
    client = AsyncClient()
    await client.aforce_login(admin_user)
    response = await client.get(reverse("admin_model_servers"))
    html = response.content.decode()
    assert f'hx-get="{PANEL}"' in html and 'hx-trigger="load, every 5s"' in html
    assert "htmx" in html  # the script that polls


async def test_no_enabled_profile(admin_user):
    assert await server_statuses() == []
    assert "No model profile is enabled." in await panel(admin_user)
