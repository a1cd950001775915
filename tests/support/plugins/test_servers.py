"""The suite really runs on PostgreSQL and Redis (or, with CHATSITE_TEST_DB=sqlite,
on the zero-config SQLite / in-memory defaults)."""

from __future__ import annotations

import os
import uuid
from typing import Any

import channels_redis.core
import pytest
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection


@pytest.mark.smoke
@pytest.mark.django_db
def test_database_backend(test_mode, postgres_server):
    if test_mode == "sqlite":
        assert postgres_server is None
        assert connection.vendor == "sqlite"
        assert "DATABASE_URL" not in os.environ
        assert connection.is_in_memory_db()  # type: ignore[attr-defined]
        return
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_database(), current_setting('server_version_num')"
        )
        name, version = cursor.fetchone()
    assert name == "test_chatsite"
    assert int(version) >= 140000  # Django 5.2 needs PostgreSQL 14+
    assert settings.DATABASES["default"]["TEST"]["NAME"] == "test_chatsite"
    if postgres_server is not None and postgres_server.managed:
        assert settings.DATABASES["default"]["PORT"] == postgres_server.port
        assert os.environ["DATABASE_URL"] == postgres_server.url


@pytest.mark.smoke
@pytest.mark.django_db(transaction=True)
def test_database_round_trip(alice, django_user_model):
    assert django_user_model.objects.get(username="alice").check_password(
        "password-alice-123"
    )


@pytest.mark.smoke
async def test_channel_layer_backend(test_mode, redis_server):
    layer = get_channel_layer()
    backend = type(layer).__module__ + "." + type(layer).__name__
    if test_mode == "sqlite":
        assert redis_server is None
        assert backend == "channels.layers.InMemoryChannelLayer"
    else:
        # channels-redis' layer with a waiting connection pool
        # (chat/live/engine/processes/layer.py).
        assert backend == "chat.live.engine.processes.layer.RedisChannelLayer"
        assert isinstance(layer, channels_redis.core.RedisChannelLayer)
        layers: dict[str, Any] = settings.CHANNEL_LAYERS
        (host,) = layers["default"]["CONFIG"]["hosts"]
        assert host["address"] == os.environ["REDIS_URL"]


@pytest.mark.smoke
async def test_channel_layer_group_round_trip():
    layer = get_channel_layer()
    assert layer is not None
    group = f"test-{uuid.uuid4().hex}"
    a, b = await layer.new_channel(), await layer.new_channel()
    await layer.group_add(group, a)
    await layer.group_add(group, b)
    await layer.group_send(group, {"type": "chat.ping", "n": 42})
    assert (await layer.receive(a))["n"] == 42
    assert (await layer.receive(b))["n"] == 42
    await layer.group_discard(group, a)
    await layer.group_discard(group, b)


async def test_redis_is_real(test_mode, redis_server):
    # Not a smoke test: the SQLite run has no Redis by design.
    assert test_mode != "sqlite"
    import redis.asyncio as aioredis

    client = aioredis.from_url(os.environ["REDIS_URL"])
    try:
        info = await client.info("server")
        assert int(info["redis_version"].split(".")[0]) >= 5  # channels-redis needs 5+
        assert await client.set("chatsite-test", "1", ex=5)
    finally:
        await client.aclose()


# --------------------------------------------------------------------------
# The live server and the browser (not smoke: they need PostgreSQL)


@pytest.mark.django_db(transaction=True)
def test_live_server_serves_static_and_the_database(live_server_url, admin_user):
    import httpx

    static = httpx.get(f"{live_server_url}/static/admin/css/base.css")
    assert static.status_code == 200
    assert "text/css" in static.headers["content-type"]
    # The child sees committed rows of the test database: log in as admin.
    with httpx.Client(base_url=live_server_url, follow_redirects=True) as client:
        form = client.get("/admin/login/")
        assert form.status_code == 200
        client.post(
            "/admin/login/?next=/admin/",
            data={
                "username": "admin",
                "password": "password-admin-123",
                "csrfmiddlewaretoken": client.cookies["csrftoken"],
            },
            headers={"referer": f"{live_server_url}/admin/login/"},
        )
        assert "Site administration" in client.get("/admin/").text


@pytest.mark.django_db(transaction=True)
def test_browser_logged_in_as_admin(live_server_url, page, login, admin_user):
    from playwright.sync_api import expect

    login(page, admin_user)
    page.goto(f"{live_server_url}/admin/")
    expect(page.locator("#site-name")).to_be_visible()
    expect(page.locator("body")).to_contain_text("Site administration")


def test_vendored_files_match_the_lock_file():
    """static/vendor/ is what scripts/vendor.sh makes from package-lock.json."""
    import subprocess
    from pathlib import Path

    script = Path(settings.BASE_DIR) / "scripts" / "vendor.sh"
    result = subprocess.run(
        [script, "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_collectstatic_with_the_production_storage(tmp_path, settings):
    """Manifest storage resolves every url() and import in our static files."""
    from django.core.management import call_command

    settings.STATIC_ROOT = tmp_path
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "chatsite.storage.ManifestStaticFilesStorage"},
    }
    call_command("collectstatic", "--noinput", verbosity=0)
    assert (tmp_path / "staticfiles.json").exists()
    assert list(tmp_path.glob("vendor/katex/fonts/KaTeX_Main-Regular.*.woff2"))


@pytest.mark.django_db(transaction=True)
def test_vendored_libraries_work_in_chromium(live_server_url, page):
    vendor = f"{live_server_url}/static/vendor"
    page.goto(f"{vendor}/VERSIONS.txt")
    for script in (
        "htmx/htmx.min.js",
        "markdown-it/markdown-it.min.js",
        "dompurify/purify.min.js",
        "highlight.js/highlight.min.js",
        "katex/katex.min.js",
    ):
        page.add_script_tag(url=f"{vendor}/{script}")
    page.add_style_tag(url=f"{vendor}/katex/katex.min.css")
    result = page.evaluate(
        """async () => {
            const math = document.createElement("div");
            document.body.append(math);
            katex.render("\\\\int_0^1 x^2\\\\,dx", math);
            await document.fonts.ready;
            return {
                htmx: htmx.version,
                md: markdownit().render("**bold** `code`"),
                clean: DOMPurify.sanitize('<img src="x" onerror="alert(1)"><b>ok</b>'),
                hl: hljs.highlight("def f(): return 1", {language: "python"}).value,
                fonts: [...document.fonts]
                    .filter((f) => f.status === "loaded")
                    .map((f) => f.family),
            };
        }"""
    )
    assert result["htmx"].startswith("2.")
    assert "<strong>bold</strong>" in result["md"]
    assert "onerror" not in result["clean"] and "<b>ok</b>" in result["clean"]
    assert 'class="hljs-keyword"' in result["hl"]
    assert any("KaTeX" in family for family in result["fonts"]), result["fonts"]
