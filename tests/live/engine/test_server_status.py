"""The model-server status panel: probes, loaded models, streams across processes."""

from __future__ import annotations

import asyncio
import socket
from datetime import timedelta

import pytest
from aiohttp import web
from django.test import AsyncClient
from django.urls import reverse
from django.utils import timezone

from chat.live.engine import loop_state
from chat.live.engine.server_status import Sampler, server_statuses
from chat.models import Conversation, Message, ModelProfile
from chat.ops.health import MODEL_SERVER_TIMEOUT

# The statuses read the database from another thread: rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

PANEL = reverse("admin_model_servers_panel")


@pytest.fixture(autouse=True)
async def fresh_pool():
    yield
    await loop_state.clients().aclose()


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
    ollama = loop_state.clients().ollama(simulator.url)
    await ollama.load(demo_profile.tag, options={"num_ctx": 4096})
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
    await ModelProfile.objects.acreate(
        tag="m", base_url=simulator.url, backend=ModelProfile.Backend.OPENAI
    )
    # An address where nothing answers /v1/models.
    wrong = simulator.url + "/not-here"
    await ModelProfile.objects.acreate(
        tag="m", base_url=wrong, backend=ModelProfile.Backend.OPENAI
    )
    statuses = {s.url: s for s in await server_statuses()}
    assert statuses[simulator.url].reachable
    assert statuses[simulator.url].loaded == []  # no /api/ps on this backend
    status = statuses[wrong]
    assert not status.reachable and "/v1/models" in status.error
    assert "404" in status.error


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

    # The next checkpoint, 4 s later, added 80 characters (~20 tokens): 5 tok/s
    # now, measured between the checkpoints, not since the answer began.
    await Message.objects.filter(pk=message.pk).aupdate(
        content="x" * 380, updated_at=began + timedelta(seconds=6)
    )
    [status] = await server_statuses()
    assert status.tokens_per_second == pytest.approx(5.0)
    # No checkpoint since the last look: the same rate.
    [status] = await server_statuses()
    assert status.tokens_per_second == pytest.approx(5.0)


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


@pytest.fixture
async def half_broken_ollama():
    """``(url, set_ps)``: an Ollama whose /api/version works and whose /api/ps
    answers whatever ``set_ps(status, body)`` said last."""
    answer = {"status": 500, "body": {"error": "runner crashed"}}

    async def version(request):
        return web.json_response({"version": "0.12.5"})

    async def ps(request):
        return web.json_response(answer["body"], status=answer["status"])

    app = web.Application()
    app.router.add_get("/api/version", version)
    app.router.add_get("/api/ps", ps)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]

    def set_ps(status, body):
        answer.update(status=status, body=body)

    yield f"http://127.0.0.1:{port}", set_ps
    await runner.cleanup()


async def test_failing_api_ps_is_said_with_the_server_still_reachable(
    half_broken_ollama, admin_user
):
    url, set_ps = half_broken_ollama
    await ModelProfile.objects.acreate(tag="m:1b", base_url=url)
    [status] = await server_statuses()
    assert status.reachable and status.version == "0.12.5"
    assert "runner crashed" in status.loaded_error and status.loaded == []
    html = await panel(admin_user)
    assert "Reachable" in html and "Loaded models unknown:" in html
    assert "runner crashed" in html


async def test_malformed_api_ps_is_said(half_broken_ollama):
    url, set_ps = half_broken_ollama
    set_ps(200, {"models": "not a list"})
    await ModelProfile.objects.acreate(tag="m:1b", base_url=url)
    [status] = await server_statuses()
    assert "/api/ps" in status.loaded_error and "Ollama" in status.loaded_error


async def test_odd_api_ps_entries_are_shown_as_far_as_they_go(half_broken_ollama):
    url, set_ps = half_broken_ollama
    set_ps(
        200,
        {
            "models": [
                {"name": "odd:1b", "size": "big", "expires_at": "2026-13-45T00:00:00Z"},
                {"model": "cpu:1b", "size": 1000, "size_vram": 400},
                "not an object",
            ]
        },
    )
    await ModelProfile.objects.acreate(tag="m:1b", base_url=url)
    [status] = await server_statuses()
    odd, cpu = status.loaded
    assert (odd.name, odd.size, odd.expires_at, odd.offloaded) == (
        "odd:1b",
        None,
        None,
        False,
    )
    assert cpu.name == "cpu:1b" and cpu.offloaded


async def test_a_hanging_server_is_unreachable_within_the_timeout(admin_user):
    accepted: list[asyncio.StreamWriter] = []

    async def swallow(reader, writer):
        accepted.append(writer)
        while await reader.read(65536):
            pass

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await ModelProfile.objects.acreate(
            tag="slow:1b", base_url=f"http://127.0.0.1:{port}"
        )
        [status] = await server_statuses()
        assert not status.reachable
        assert status.error == f"no answer within {MODEL_SERVER_TIMEOUT:.3g} s"
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()


T0 = timezone.now()


def at(seconds: float):
    return T0 + timedelta(seconds=seconds)


def test_sampler_measures_between_checkpoints():
    sampler = Sampler()
    # Seen first 2 s after it began, with 80 characters: 10 tok/s on average.
    assert sampler.rates([(1, 80, at(0), at(2))]) == {1: pytest.approx(10.0)}
    # Another 0.2 s: too short to measure, the last rate stands.
    assert sampler.rates([(1, 84, at(0), at(2.2))]) == {1: pytest.approx(10.0)}
    # 2 s after the last sample, 400 characters more: 50 tok/s.
    assert sampler.rates([(1, 480, at(0), at(4))]) == {1: pytest.approx(50.0)}
    # A heartbeat without new text: 0 tok/s. A new answer joins.
    rates = sampler.rates([(1, 480, at(0), at(5)), (2, 0, at(4.8), at(5))])
    assert rates == {1: 0.0, 2: 0.0}
    # Finished answers drop out.
    assert sampler.rates([]) == {}
    assert sampler.rates([(1, 480, at(0), at(6))]) == {1: pytest.approx(20.0)}
