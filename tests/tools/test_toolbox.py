"""The registry of tool sources (`chat.tools.toolbox`): a turn gets the tools
its conversation switched on, of the sources that offer them; a source that
fails costs only its own tools."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from asgiref.sync import async_to_sync

from chat.tools import toolbox
from chat.tools.calls import Outcome, ToolCall, ToolSpec

pytestmark = pytest.mark.django_db


class Source:
    async def run(self, spec: ToolSpec, call: ToolCall, *, deadline: float) -> Outcome:
        return Outcome(text="ok")


def spec(source: str, tool: str) -> ToolSpec:
    return ToolSpec(f"{source}__{tool}", source, tool, tool, "", {"type": "object"})


async def offers(user, sources) -> list[toolbox.Offer]:
    return [
        toolbox.Offer("a", "A", Source(), [spec("a", "one"), spec("a", "two")]),
        toolbox.Offer("b", "B", Source(), [spec("b", "three")]),
        toolbox.Offer("c", "C", Source(), [], unavailable="it is down"),
    ]


async def failing(user, sources) -> list[toolbox.Offer]:
    raise RuntimeError("the server's list is unreadable")


@pytest.fixture
def registered(monkeypatch) -> Iterator[None]:
    # Only these: the site's own sources (MCP, web) are tested on their own.
    monkeypatch.setattr(toolbox, "_providers", {})
    monkeypatch.setattr(toolbox, "_loaded", True)
    toolbox.register("test", offers)
    toolbox.register("failing", failing)
    yield


@pytest.fixture
def none_registered(monkeypatch) -> None:
    monkeypatch.setattr(toolbox, "_providers", {})
    monkeypatch.setattr(toolbox, "_loaded", True)


def names(box: toolbox.Toolbox) -> list[str]:
    return [s.name for s in box.specs]


def tools_for(conversation) -> toolbox.Toolbox:
    wanted = toolbox.wanted(conversation)
    return (
        toolbox.NO_TOOLS if wanted is None else async_to_sync(toolbox.resolve)(wanted)
    )


def test_a_conversation_gets_the_tools_it_switched_on(
    alice, conversation, registered, django_assert_num_queries
):
    with django_assert_num_queries(0):  # nothing on: no tools, and no query
        assert toolbox.wanted(conversation) is None
    conversation.tool_choices = {"sources": {"a": True, "b": False}}
    assert names(tools_for(conversation)) == ["a__one", "a__two"]
    conversation.tool_choices = {
        "sources": {"a": True, "b": True},
        "tools": {"a/two": False},
    }
    box = tools_for(conversation)
    assert names(box) == ["a__one", "b__three"]
    assert box.find("a__two") is None and box.find("b__three") is not None
    assert box.offered()[0]["function"]["name"] == "a__one"
    assert box.notices == ()


def test_a_source_switched_on_that_offers_nothing_now_says_why(
    alice, conversation, registered
):
    conversation.tool_choices = {"sources": {"a": True, "c": True}}
    box = tools_for(conversation)
    assert names(box) == ["a__one", "a__two"]
    assert box.notices == ("C: it is down",)


def test_the_menu_lists_every_source_but_a_failing_one(alice, registered, caplog):
    offered = async_to_sync(toolbox.available)(alice)
    assert [o.id for o in offered] == ["a", "b", "c"]
    assert "tool source 'failing' failed" in caplog.text


def test_without_sources_there_are_no_tools(alice, conversation, none_registered):
    conversation.tool_choices = {"sources": {"a": True}}
    assert not toolbox.has_sources()
    assert toolbox.wanted(conversation) is None


def test_the_sites_sources_are_registered():
    toolbox.has_sources()
    assert {"mcp", "web"} <= set(toolbox._providers)


def test_a_name_offered_twice_keeps_the_first():
    first, second = Source(), Source()
    box = toolbox.Toolbox.of(
        [
            toolbox.Offer("a", "A", first, [spec("x", "same")]),
            toolbox.Offer("b", "B", second, [spec("x", "same")]),
        ]
    )
    found = box.find("x__same")
    assert found is not None and found[1] is first and len(box.specs) == 1
