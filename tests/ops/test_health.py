from __future__ import annotations

import asyncio
import os
import socket
import time

import httpx
import pytest
from django.db import OperationalError
from django.test import AsyncClient

from chat.live.engine import loop_state
from chat.models import ModelProfile
from chat.ops import health

# The checks read the database from their own thread: rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

ANONYMOUS_OK = {
    "status": "ok",
    "checks": {
        "database": {"ok": True},
        "channel_layer": {"ok": True},
        "model_servers": {"ok": True},
    },
}


@pytest.fixture(autouse=True)
async def fresh_pool():
    yield
    await loop_state.clients().aclose()


@pytest.fixture
async def hanging_server():
    """``http://127.0.0.1:<port>``: accepts connections, reads, never answers."""
    connections: list[asyncio.StreamWriter] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        connections.append(writer)
        while await reader.read(65536):
            pass

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    for writer in connections:
        writer.close()
    server.close()
    await server.wait_closed()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def get_health(client: AsyncClient | None = None, **headers):
    client = client or AsyncClient()
    start = time.monotonic()
    response = await client.get("/healthz", headers=headers)
    return response, response.json(), time.monotonic() - start


async def staff_client(user) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(user)
    return client


async def test_all_ok_for_anonymous_shows_only_booleans(demo_profile):
    response, body, _ = await get_health()
    assert response.status_code == 200
    assert body == ANONYMOUS_OK
    assert "no-store" in response["Cache-Control"]


async def test_staff_gets_details(demo_profile, simulator, admin_user):
    response, body, _ = await get_health(await staff_client(admin_user))
    assert response.status_code == 200 and body["status"] == "ok"
    checks = body["checks"]
    assert checks["database"]["ms"] >= 0
    assert checks["channel_layer"]["ms"] >= 0 and checks["channel_layer"]["backend"]
    [server] = checks["model_servers"]["servers"]
    assert server["url"] == simulator.url and server["ok"] is True
    assert server["version"] == simulator.config.version


async def test_signed_in_non_staff_gets_no_details(demo_profile, alice):
    _, body, _ = await get_health(await staff_client(alice))
    assert body == ANONYMOUS_OK


async def test_each_server_is_checked_once(demo_profile, simulator, admin_user):
    await ModelProfile.objects.acreate(tag="other:1b", base_url=simulator.url + "/")
    await ModelProfile.objects.acreate(
        tag="off:1b", base_url="http://127.0.0.1:9", enabled=False
    )
    _, body, _ = await get_health(await staff_client(admin_user))
    assert [s["url"] for s in body["checks"]["model_servers"]["servers"]] == [
        simulator.url
    ]


async def test_no_enabled_model_is_not_a_failure():
    response, body, _ = await get_health()
    assert response.status_code == 200 and body == ANONYMOUS_OK


async def test_model_server_down_is_degraded(demo_profile, admin_user):
    await ModelProfile.objects.acreate(tag="gone:7b", base_url="http://127.0.0.1:9")
    response, body, _ = await get_health()
    assert response.status_code == 200
    assert body["status"] == "degraded"
    assert body["checks"]["model_servers"] == {"ok": False}

    _, body, _ = await get_health(await staff_client(admin_user))
    servers = {s["url"]: s for s in body["checks"]["model_servers"]["servers"]}
    assert servers["http://127.0.0.1:9"]["ok"] is False
    assert "127.0.0.1:9" in servers["http://127.0.0.1:9"]["error"]
    assert servers[demo_profile.base_url]["ok"] is True


async def test_channel_layer_down_is_failing(settings, demo_profile):
    settings.HEALTH_TOKEN = "t0ken"
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [f"redis://127.0.0.1:{closed_port()}/0"]},
        }
    }
    response, body, elapsed = await get_health(authorization="Bearer t0ken")
    assert response.status_code == 503
    assert body["status"] == "failing"
    layer = body["checks"]["channel_layer"]
    assert layer["ok"] is False and "onnect" in layer["error"]
    assert body["checks"]["database"]["ok"] is True
    assert elapsed < 1


async def test_database_down_is_failing(monkeypatch, settings, demo_profile):
    def broken(*args):
        raise OperationalError("connection refused")

    monkeypatch.setattr(health, "_database_work", broken)
    settings.HEALTH_TOKEN = "t0ken"
    response, body, _ = await get_health(authorization="Bearer t0ken")
    assert response.status_code == 503 and body["status"] == "failing"
    assert "connection refused" in body["checks"]["database"]["error"]
    assert body["checks"]["model_servers"]["ok"] is False
    assert body["checks"]["channel_layer"]["ok"] is True


async def test_hung_database_is_failing_after_its_timeout(monkeypatch):
    def hung(*args):
        time.sleep(health.DATABASE_TIMEOUT + 0.5)

    monkeypatch.setattr(health, "_database_work", hung)
    response, body, elapsed = await get_health()
    assert response.status_code == 503 and body["checks"]["database"] == {"ok": False}
    assert elapsed < health.DATABASE_TIMEOUT + 0.4


async def test_token_shows_details(settings, demo_profile, simulator):
    settings.HEALTH_TOKEN = "s3cret-token"
    _, body, _ = await get_health(authorization="Bearer s3cret-token")
    assert body["checks"]["model_servers"]["servers"][0]["url"] == simulator.url
    _, body, _ = await get_health(authorization="Bearer wrong-token")
    assert body == ANONYMOUS_OK
    _, body, _ = await get_health(authorization="Basic s3cret-token")
    assert body == ANONYMOUS_OK


async def test_no_token_configured_means_no_token_works(settings, demo_profile):
    settings.HEALTH_TOKEN = ""
    _, body, _ = await get_health(authorization="Bearer ")
    assert body == ANONYMOUS_OK


async def test_hanging_model_server_is_bounded(hanging_server, settings):
    await ModelProfile.objects.acreate(tag="slow:70b", base_url=hanging_server)
    settings.HEALTH_TOKEN = "t0ken"
    response, body, elapsed = await get_health(authorization="Bearer t0ken")
    assert response.status_code == 200 and body["status"] == "degraded"
    [server] = body["checks"]["model_servers"]["servers"]
    assert server["error"] == f"no answer within {health.MODEL_SERVER_TIMEOUT:g} s"
    assert health.MODEL_SERVER_TIMEOUT - 0.1 < elapsed < 3


async def test_everything_slow_or_hanging_stays_under_three_seconds(
    hanging_server, settings, monkeypatch
):
    """A slow database, a Redis that never answers and a hanging model server."""
    real_work = health._database_work

    def slow_work(*args):
        time.sleep(health.DATABASE_TIMEOUT * 0.8)
        return real_work(*args)

    monkeypatch.setattr(health, "_database_work", slow_work)
    await ModelProfile.objects.acreate(tag="slow:70b", base_url=hanging_server)
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [hanging_server.replace("http", "redis")]},
        }
    }
    response, body, elapsed = await get_health()
    assert response.status_code == 503
    assert body["checks"] == {
        "database": {"ok": True},
        "channel_layer": {"ok": False},
        "model_servers": {"ok": False},
    }
    assert elapsed < 3


async def test_only_get_and_head():
    client = AsyncClient()
    assert (await client.head("/healthz")).status_code == 200
    assert (await client.post("/healthz")).status_code == 405


def test_served_by_daphne(live_server_url):
    response = httpx.get(live_server_url + "/healthz", timeout=10)
    assert response.status_code == 200
    assert response.json() == ANONYMOUS_OK


def test_a_forked_child_gets_its_own_database_threads():
    """Daphne's test server (and pre-forking servers) fork after the first checks."""
    health._db_executor.submit(int).result()  # the parent has started a thread
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running pytest's exit
        answer = b"0"
        try:
            answer = b"1" if health._db_executor.submit(int).result(5) == 0 else b"0"
        finally:
            os.write(write, answer)
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"


@pytest.mark.parametrize("suffix", ["", "/v1"])
async def test_openai_compatible_server_is_checked_by_its_model_list(
    simulator, admin_user, suffix
):
    await ModelProfile.objects.acreate(
        tag="qwen3-demo:8b", backend="openai", base_url=simulator.url + suffix
    )
    response, body, _ = await get_health(await staff_client(admin_user))
    assert response.status_code == 200 and body["status"] == "ok"
    [server] = body["checks"]["model_servers"]["servers"]
    assert server["ok"] is True
