"""The issue's "done when", in Chromium: a user in a team switches on an MCP
server's tool (our test server over Streamable HTTP,
tests/tools/mcp/tool_server.py, offered to the team) and web search (a
SearXNG-compatible endpoint and pages served by a local HTTP server,
allow-listed, tests/tools/web/pages.py) in the conversation's tools menu,
asks, and sees thinking, the streamed tool calls, their results and the
answer with citations, as a live-link viewer does; stops during a slow
tool's run; reloads mid-turn and the page resumes at its step.

The site runs in a Daphne of its own, its web search configured from the
environment as a deployment's would be; the simulator calls the tools its
`tool_script` names (docs/tools.md, "The demo model's tools")."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.conf import settings
from playwright.sync_api import expect

from chat.models import Conversation, Membership, Message, ShareLink, Team, ToolServer
from tests.conftest import ARTIFACTS
from tests.support.plugins.personas import _session_key
from tests.support.services.daphnes import Daphne, daphne_env
from tests.tools.mcp.conftest import our_http
from tests.tools.web.pages import Web, serving

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

__all__ = ["our_http"]

WAIT = 30_000  # ms, a bound for a loaded machine


@pytest.fixture
def web() -> Iterator[Web]:
    with serving() as served:
        yield served


@pytest.fixture
def site(web) -> Iterator[str]:
    env = {
        **daphne_env(),
        "CHATSITE_WEB_SEARCH_URL": web.base,
        "WEB_FETCH_PRIVATE_ALLOW": "127.0.0.1/32",
    }
    ARTIFACTS.mkdir(exist_ok=True)
    server = Daphne(env, ARTIFACTS / "tools-daphne.log").start()
    yield f"http://127.0.0.1:{server.port}"
    server.stop()


@pytest.fixture
def setup(alice, demo_profile, our_http):
    # Thinking stays on in tool turns (off by default: ModelProfile
    # think_with_tools), so the page shows thinking beside the steps.
    demo_profile.think_with_tools = True
    demo_profile.save()
    team = Team.objects.create(name="Docs")
    Membership.objects.create(team=team, user=alice)
    server = ToolServer.objects.create(name="Ours", slug="ours", url=our_http)
    server.teams.add(team)
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    return conversation, server


def sign_in(page, site, user) -> None:
    page.context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": _session_key(user),
                "url": site,
            }
        ]
    )


def switch_on(page, value: str) -> None:
    """Check a source in the tools menu; saved at once (htmx swaps the menu)."""
    box = page.locator(f'#tools-menu input[name=source][value="{value}"]')
    with page.expect_response(lambda r: r.url.endswith("/tools/")) as saved:
        box.check()
    assert saved.value.status == 200
    expect(
        page.locator(f'#tools-menu input[name=source][value="{value}"]')
    ).to_be_checked()


def open_with_tools(page, site, conversation, server) -> None:
    page.goto(site + conversation.get_absolute_url())
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1", timeout=WAIT)
    page.click("#tools-menu > summary")
    switch_on(page, f"mcp:{server.pk}")
    switch_on(page, "web")
    page.click("#tools-menu > summary")


def ask(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")


def test_a_tool_turn_streams_its_steps_to_the_owner_and_a_live_link(
    site, setup, page, browser, alice, simulator, web
):
    conversation, server = setup
    simulator.config.tps = 40
    simulator.config.think_tokens = 8
    simulator.config.tool_script = [
        [
            {"name": "ours__add", "arguments": {"a": 2, "b": 40}},
            {"name": "web_search", "arguments": {"query": "tides in Brest"}},
        ]
    ]
    _, token = ShareLink.create_for(
        conversation, mode=ShareLink.Mode.LIVE, include_thinking=True
    )
    sign_in(page, site, alice)
    open_with_tools(page, site, conversation, server)
    viewer_context = browser.new_context()  # signed out
    try:
        viewer = viewer_context.new_page()
        viewer.goto(f"{site}/s/{token}/")
        ask(page, "Add 2 and 40, and search the tides")
        for shown in (page, viewer):
            answer = shown.locator("article.assistant").last
            expect(answer).to_have_attribute("data-status", "done", timeout=WAIT)
            cards = answer.locator(".tool-step")
            expect(cards).to_have_count(2)
            add, search = cards.nth(0), cards.nth(1)
            expect(add.locator(".tool-source")).to_have_text(f"mcp:{server.pk}")
            expect(add).to_have_attribute("data-state", "done")
            expect(add.locator(".tool-args")).to_have_text('{\n  "a": 2,\n  "b": 40\n}')
            expect(search.locator(".tool-source")).to_have_text("web")
            expect(search).to_have_attribute("data-state", "done")
            expect(answer.locator("details.thinking").first).to_be_attached()
            expect(answer.locator(".answer")).to_contain_text("42")
            links = answer.locator(".citations a")
            expect(links.first).to_have_attribute("href", web.url("/article"))
            expect(links.first).to_have_text("Tide tables of Brest")
    finally:
        viewer_context.close()
    stored = Message.objects.get(role="assistant")
    assert [p["name"] for p in stored.steps if p["kind"] == "tool"] == [
        "ours__add",
        "web_search",
    ]
    assert stored.thinking and stored.model_calls == 2


def test_stop_during_a_slow_tool_run(site, setup, page, alice, simulator):
    conversation, server = setup
    simulator.config.tool_script = [
        [{"name": "ours__slow", "arguments": {"seconds": 120}}]
    ]
    sign_in(page, site, alice)
    open_with_tools(page, site, conversation, server)
    ask(page, "Take your time")
    card = page.locator("article.assistant .tool-step")
    expect(card).to_have_attribute("data-state", "running", timeout=WAIT)
    expect(card.locator(".tool-status")).to_have_text(re.compile(r"^Running…"))
    page.click("#stop-button")
    answer = page.locator("article.assistant")
    expect(answer).to_have_attribute("data-status", "stopped", timeout=WAIT)
    expect(card).not_to_have_attribute("data-state", "running")
    stored = Message.objects.get(role="assistant")
    (tool,) = [p for p in stored.steps if p["kind"] == "tool"]
    assert stored.status == "stopped" and tool["error"] == "stopped"
    assert len(simulator.asked) == 1  # no model call after the stop


def test_a_reload_mid_turn_resumes_at_its_step(site, setup, page, alice, simulator):
    conversation, server = setup
    simulator.config.tps = 40
    simulator.config.think_tokens = 8
    simulator.config.tool_script = [
        [{"name": "ours__slow", "arguments": {"seconds": 4}}]
    ]
    sign_in(page, site, alice)
    open_with_tools(page, site, conversation, server)
    ask(page, "Take your time")
    card = page.locator("article.assistant .tool-step")
    expect(card).to_have_attribute("data-state", "running", timeout=WAIT)
    page.reload()
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1", timeout=WAIT)
    # The call is shown once, at its step, and finishes live.
    expect(card).to_have_count(1)
    expect(card.locator(".tool-args")).to_have_text('{\n  "seconds": 4\n}')
    answer = page.locator("article.assistant")
    expect(answer).to_have_attribute("data-status", "done", timeout=WAIT)
    expect(card).to_have_count(1)
    expect(card).to_have_attribute("data-state", "done")
    stored = Message.objects.get(role="assistant")
    assert stored.status == "done"
    # Exactly: the page shows the stored text, nothing lost or doubled.
    expect(answer.locator(".answer")).to_contain_text(stored.content[-40:].strip())
    shown = answer.locator(".answer").inner_text()
    assert shown.count(stored.content.split()[0]) == stored.content.count(
        stored.content.split()[0]
    )
