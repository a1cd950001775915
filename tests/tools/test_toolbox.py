"""The registry of tool sources (`chat.tools.toolbox`): a turn gets the tools
its conversation switched on, of the sources that offer them; a source that
fails costs only its own tools."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chat.tools import toolbox
from chat.tools.calls import Outcome, ToolCall, ToolSpec

pytestmark = pytest.mark.django_db


class Source:
    async def run(self, spec: ToolSpec, call: ToolCall, *, deadline: float) -> Outcome:
        return Outcome(text="ok")


def spec(source: str, tool: str) -> ToolSpec:
    return ToolSpec(f"{source}__{tool}", source, tool, tool, "", {"type": "object"})


def offers(user, conversation) -> list[toolbox.Offer]:
    return [
        toolbox.Offer("a", "A", Source(), [spec("a", "one"), spec("a", "two")]),
        toolbox.Offer("b", "B", Source(), [spec("b", "three")]),
    ]


def failing(user, conversation) -> list[toolbox.Offer]:
    raise RuntimeError("the server's list is unreadable")


@pytest.fixture
def registered() -> Iterator[None]:
    toolbox.register("test", offers)
    toolbox.register("failing", failing)
    yield
    toolbox.unregister("test")
    toolbox.unregister("failing")


def names(box: toolbox.Toolbox) -> list[str]:
    return [s.name for s in box.specs]


def test_a_conversation_gets_the_tools_it_switched_on(alice, conversation, registered):
    assert not toolbox.tools_for(alice, conversation)  # nothing on: no tools
    conversation.tool_choices = {"sources": {"a": True, "b": False}}
    assert names(toolbox.tools_for(alice, conversation)) == ["a__one", "a__two"]
    conversation.tool_choices = {
        "sources": {"a": True, "b": True},
        "tools": {"a/two": False},
    }
    box = toolbox.tools_for(alice, conversation)
    assert names(box) == ["a__one", "b__three"]
    assert box.find("a__two") is None and box.find("b__three") is not None
    assert box.offered()[0]["function"]["name"] == "a__one"


def test_the_menu_lists_every_source_but_a_failing_one(alice, registered, caplog):
    assert [o.id for o in toolbox.available(alice)] == ["a", "b"]
    assert "tool source 'failing' failed" in caplog.text


def test_without_sources_there_are_no_tools(alice, conversation):
    conversation.tool_choices = {"sources": {"a": True}}
    assert not toolbox.has_sources()
    assert toolbox.tools_for(alice, conversation) is toolbox.NO_TOOLS


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
