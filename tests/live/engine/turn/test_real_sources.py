"""Turns with the site's own sources of tools, through the owner's socket:
an MCP server offered to the user's team (our test server over Streamable
HTTP, tests/tools/mcp/tool_server.py), its approval flag, web search and
page fetching (a SearXNG-compatible endpoint and pages served by a local
HTTP server, tests/tools/web/pages.py), and a server down when the turn
begins (left out, the user told, the turn goes on)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async

from chat.models import Membership, Message, Team, ToolServer
from tests.live.engine.admission.queueing import on_database
from tests.support.communicators import connect, frames_until, send, text_of
from tests.tools.web.pages import Web, serving

pytestmark = [on_database, pytest.mark.timeout(120)]


def types(frames: list[dict]) -> list[str]:
    return [f["type"] for f in frames]


@pytest.fixture
def web(settings) -> Iterator[Web]:
    with serving() as served:
        settings.WEB_SEARCH_URL = served.base
        settings.WEB_FETCH_PRIVATE_ALLOW = ["127.0.0.1/32"]
        yield served


def server_for_team(alice, url: str, **fields) -> ToolServer:
    team = Team.objects.create(name="docs")
    Membership.objects.create(team=team, user=alice)
    server = ToolServer.objects.create(name="Ours", slug="ours", url=url, **fields)
    server.teams.add(team)
    return server


def switch_on(conversation, *sources: str) -> None:
    conversation.tool_choices = {"sources": dict.fromkeys(sources, True)}
    conversation.save(update_fields=["tool_choices"])


def offered(entry) -> list[str]:
    return [tool["function"]["name"] for tool in entry.body.get("tools", [])]


async def test_an_mcp_servers_tool_runs_in_a_turn(
    alice, conversation, simulator, our_http
):
    server = await sync_to_async(server_for_team)(alice, our_http)
    await sync_to_async(switch_on)(conversation, server_source := f"mcp:{server.pk}")
    socket = await connect(alice, conversation)
    await send(socket, "Please use add with 2 and 40")
    frames = await frames_until(socket, "done")
    await socket.disconnect()
    call = next(f for f in frames if f["type"] == "tool_call")
    assert call["name"] == "ours__add" and call["source"] == server_source
    result = next(f for f in frames if f["type"] == "tool_result")
    assert result["ok"] is True and result["preview"] == "42", result
    assert frames[-1]["status"] == "done"
    assert "ours__add" in offered(simulator.asked[0])
    answer = await Message.objects.aget(pk=frames[-1]["message_id"])
    (tool,) = [p for p in answer.steps if p["kind"] == "tool"]
    assert tool["source"] == server_source and tool["text"] == "42"
    assert "42" in answer.content  # the model got the result back


async def test_an_mcp_tool_needing_approval_waits_for_the_user(
    alice, conversation, simulator, our_http
):
    server = await sync_to_async(server_for_team)(
        alice, our_http, tools_needing_approval=["echo"]
    )
    await sync_to_async(switch_on)(conversation, f"mcp:{server.pk}")
    socket = await connect(alice, conversation)
    await send(socket, "Use echo to say hello")
    waiting = (await frames_until(socket, "tool_run"))[-1]
    assert waiting["state"] == "awaiting_approval"
    await socket.send_json_to(
        {
            "type": "approve",
            "message_id": waiting["message_id"],
            "call_id": waiting["call_id"],
            "allow": True,
        }
    )
    frames = await frames_until(socket, "done")
    await socket.disconnect()
    run = next(f for f in frames if f["type"] == "tool_run")
    assert run["state"] == "running"
    result = next(f for f in frames if f["type"] == "tool_result")
    assert result["ok"] is True and "hello" in result["preview"]


async def test_web_search_and_a_fetch_run_in_a_turn_with_citations(
    alice, conversation, simulator, web
):
    await sync_to_async(switch_on)(conversation, "web")
    article = web.url("/article")
    simulator.config.tool_script = [
        [
            {"name": "web_search", "arguments": {"query": "tides in Brest"}},
            {"name": "web_fetch", "arguments": {"url": article}},
        ]
    ]
    socket = await connect(alice, conversation)
    await send(socket, "When is high water in Brest?")
    frames = await frames_until(socket, "done")
    await socket.disconnect()
    assert sorted(offered(simulator.asked[0])) == ["web_fetch", "web_search"]
    searched, fetched = [f for f in frames if f["type"] == "tool_result"]
    assert searched["ok"] and fetched["ok"], (searched, fetched)
    assert article in [c["url"] for c in searched["citations"]]
    assert fetched["citations"] == [{"url": article, "title": "Tide tables of Brest"}]
    assert "/search" in web.served and "/article" in web.served
    answer = await Message.objects.aget(pk=frames[-1]["message_id"])
    assert "06:12" in answer.content  # the page's text reached the model
    assert answer.content == text_of(frames, "content")


async def test_a_server_down_when_the_turn_begins_is_left_out_and_said(
    alice, conversation, simulator, web
):
    server = await sync_to_async(server_for_team)(
        alice, "http://127.0.0.1:1/mcp", timeout=5
    )
    await sync_to_async(switch_on)(conversation, f"mcp:{server.pk}", "web")
    socket = await connect(alice, conversation)
    await send(socket, "Please use add with 2 and 40")
    frames = await frames_until(socket, "done")
    await socket.disconnect()
    kinds = types(frames)
    notice = next(f for f in frames if f["type"] == "error")
    assert notice["code"] == "tools_unavailable" and "Ours" in notice["detail"]
    assert kinds.index("start") < kinds.index("error")
    assert frames[-1]["status"] == "done" and "tool_call" not in kinds
    assert sorted(offered(simulator.asked[0])) == ["web_fetch", "web_search"]
    answer = await Message.objects.aget(pk=frames[-1]["message_id"])
    assert answer.status == "done" and answer.content
    assert answer.error_code == "tools_unavailable" and "Ours" in answer.error_detail
