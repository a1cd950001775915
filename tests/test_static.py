"""The production storage (chatsite.storage) hashes the site's ES modules and
rewrites their imports to the hashed names, so no module loads another by its
bare name."""

from __future__ import annotations

import json
import posixpath
import re
import runpy
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test.utils import override_settings

PRODUCTION_STORAGE = "chatsite.storage.ManifestStaticFilesStorage"

# `import ... from "x"`, `export ... from "x"`, `import "x"`, `import("x")`.
SPECIFIER = re.compile(r"""(?:\bfrom|\bimport)\s*\(?\s*["']([^"']+)["']""")


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("static")
    storages = {**settings.STORAGES, "staticfiles": {"BACKEND": PRODUCTION_STORAGE}}
    with override_settings(STATIC_ROOT=root, STORAGES=storages):
        call_command("collectstatic", "--noinput", verbosity=0)
    return root


def manifest(root: Path) -> dict[str, str]:
    paths: dict[str, str] = json.loads((root / "staticfiles.json").read_text())["paths"]
    return paths


def imports(root: Path, hashed: str) -> list[str]:
    """The files the module at `hashed` imports, as paths under STATIC_ROOT."""
    text = (root / hashed).read_text()
    folder = posixpath.dirname(hashed)
    return [
        posixpath.normpath(posixpath.join(folder, s)) for s in SPECIFIER.findall(text)
    ]


def test_production_settings_use_this_storage(monkeypatch):
    monkeypatch.setenv("DEBUG", "false")
    conf = runpy.run_path(str(Path(settings.BASE_DIR) / "chatsite" / "settings.py"))
    assert conf["STORAGES"]["staticfiles"]["BACKEND"] == PRODUCTION_STORAGE


def test_modules_import_their_dependencies_by_hashed_name(collected):
    paths = manifest(collected)
    hashed_names = set(paths.values())
    modules = {
        name: hashed
        for name, hashed in paths.items()
        if re.fullmatch(r"chat/\w+\.js", name)
    }
    assert {"chat/stream.js", "chat/socket.js", "chat/composer.js"} <= modules.keys()
    for name, hashed in modules.items():
        for target in imports(collected, hashed):
            assert target in hashed_names, f"{name} imports {target}, not a hashed name"
    # The entry point reaches the socket and the socket its handlers' parts.
    assert paths["chat/socket.js"] in imports(collected, paths["chat/stream.js"])
    assert paths["chat/live_answer.js"] in imports(collected, paths["chat/socket.js"])
    assert paths["chat/close_codes.js"] in imports(collected, paths["chat/socket.js"])
    assert paths["chat/markdown.js"] in imports(collected, paths["chat/live_answer.js"])


def test_the_module_graph_has_no_cycle():
    """A cycle would keep changing the hashes of its modules: collectstatic's
    passes would never settle (Django gives up after a few)."""
    source = Path(settings.BASE_DIR) / "static"
    names = [p.relative_to(source).as_posix() for p in (source / "chat").glob("*.js")]
    graph = {name: imports(source, name) for name in names}
    done: set[str] = set()

    def visit(name: str, trail: tuple[str, ...]) -> None:
        assert name not in trail, " -> ".join((*trail, name))
        if name in done:
            return
        for target in graph.get(name, []):
            visit(target, (*trail, name))
        done.add(name)

    for name in graph:
        visit(name, ())


def test_the_page_preloads_every_module_the_stream_imports():
    """templates/chat/_stream_head.html names stream.js's imports, so the
    browser fetches them side by side instead of one level at a time."""
    source = Path(settings.BASE_DIR) / "static"
    reachable: set[str] = set()
    waiting = ["chat/stream.js"]
    while waiting:
        for target in imports(source, waiting.pop()):
            if target not in reachable:
                reachable.add(target)
                waiting.append(target)
    head = Path(settings.BASE_DIR) / "templates" / "chat" / "_stream_head.html"
    preloaded = re.findall(
        r"""rel="modulepreload" href="{% static '([^']+)' %}""", head.read_text()
    )
    assert sorted(preloaded) == sorted(reachable)


ORIGIN = "http://localhost:9"  # nothing listens: the page's socket is refused


@pytest.mark.django_db
def test_the_hashed_modules_load_and_run_in_chromium(
    collected, page, alice, demo_profile, settings
):
    """The conversation page as production renders it (hashed names), its
    files served from the collected tree: every module links and runs."""
    from django.test import Client
    from django.urls import reverse
    from playwright.sync_api import expect

    from chat.models import Conversation

    settings.STATIC_ROOT = collected
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": PRODUCTION_STORAGE},
    }
    conversation = Conversation.objects.create(
        owner=alice, model_profile=demo_profile, title="Hashed"
    )
    conversation.messages.create(role="user", content="Hi")
    conversation.messages.create(
        role="assistant", content="Some `code` and $x^2$.", status="done"
    )
    client = Client(HTTP_HOST="localhost:9")
    client.force_login(alice)
    url = reverse("conversation", args=[conversation.pk])
    response = client.get(url)
    assert response.status_code == 200
    served: list[str] = []

    def serve(route):
        path = route.request.url.removeprefix(ORIGIN)
        if path == url:
            headers = {
                "Content-Type": "text/html; charset=utf-8",
                "Content-Security-Policy": response["Content-Security-Policy"],
            }
            return route.fulfill(body=response.content, headers=headers)
        name = path.removeprefix("/" + settings.STATIC_URL.lstrip("/"))
        file = collected / name
        if name == path or not file.is_file():
            return route.fulfill(status=404)
        served.append(name)
        types = {".js": "text/javascript", ".css": "text/css"}
        content_type = types.get(file.suffix, "application/octet-stream")
        return route.fulfill(
            body=file.read_bytes(), headers={"Content-Type": content_type}
        )

    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.route(f"{ORIGIN}/**", serve)
    page.goto(ORIGIN + url)
    # socket.js ran: its socket was refused, and it is trying again.
    expect(page.locator("#connection")).to_have_attribute("data-state", "reconnecting")
    # markdown.js ran on the stored answer, with the vendored KaTeX.
    expect(page.locator(".answer[data-enhanced] .katex")).to_have_count(1)
    assert errors == []
    paths = manifest(collected)
    modules = {
        paths[f"chat/{m}.js"]
        for m in ("stream", "socket", "composer", "live_answer", "markdown")
    }
    assert modules <= set(served)
    hashed_names = set(paths.values())
    assert [name for name in served if name not in hashed_names] == []


def test_the_web_app_manifest_names_its_icons_by_hashed_name(collected):
    paths = manifest(collected)
    hashed = paths["chat/app.webmanifest"]
    app = json.loads((collected / hashed).read_text())
    assert app["display"] == "standalone" and app["start_url"] == "/"
    folder = posixpath.dirname(hashed)
    icons = {
        posixpath.normpath(posixpath.join(folder, icon["src"])): icon
        for icon in app["icons"]
    }
    assert set(icons) <= set(paths.values())  # each one a hashed file
    sizes = {(icon["sizes"], icon.get("purpose", "any")) for icon in icons.values()}
    assert {("192x192", "any"), ("512x512", "any"), ("512x512", "maskable")} <= sizes
