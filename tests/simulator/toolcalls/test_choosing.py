"""Which tools a simulated reply calls, and with which arguments
(`chat/simulator/toolcalls/choosing.py`, `arguments.py`), and the script
that decides instead."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from chat.simulator import (
    ConfigError,
    SimulatorConfig,
    SimulatorServer,
    update_config,
)
from chat.simulator.toolcalls.arguments import arguments_for, json_pieces
from chat.simulator.toolcalls.choosing import Offer, plan_turn
from tests.simulator.toolcalls.offering import (
    ASK_BOTH,
    ASK_WEATHER,
    RESULT,
    TOOLS,
    WEATHER_ARGS,
    ollama_history,
    openai_history,
)

OFFER = Offer(tuple(t["function"] for t in TOOLS))


def calls(
    messages: list[dict[str, Any]], offer: Offer = OFFER, **config: Any
) -> list[tuple[str, Any]]:
    turn = plan_turn(SimulatorConfig(**config), messages, offer, think=True)
    return [
        (c.name, c.arguments if c.parsed() is None else c.parsed()) for c in turn.calls
    ]


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def test_a_question_naming_a_tool_calls_it_with_arguments_from_its_schema() -> None:
    assert calls(ASK_WEATHER) == [("get_weather", WEATHER_ARGS)]


def test_several_tools_named_are_called_in_the_order_named() -> None:
    assert calls(ASK_BOTH) == [
        ("everything__echo", {"message": "say hello world"}),
        ("get_weather", {"location": "Oslo", "unit": "celsius", "days": 1}),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "How warm is it in Paris?",  # no tool named
        "Is get_weathers a word?",  # not a whole word
        "What does everything__echo_all do?",
    ],
)
def test_no_call_when_no_tool_is_named(text: str) -> None:
    assert calls(ask(text)) == []
    assert plan_turn(SimulatorConfig(), ask(text), OFFER, think=True).script.content


def test_no_call_without_tools_or_with_tool_choice_none() -> None:
    assert calls(ASK_WEATHER, Offer()) == []
    assert calls(ASK_WEATHER, Offer(OFFER.tools, "none")) == []
    script = [[{"name": "get_weather"}]]
    assert calls(ASK_WEATHER, Offer(OFFER.tools, "none"), tool_script=script) == []


def test_tool_choice_required_and_named_force_a_call() -> None:
    question = ask("How warm is it in Paris?")
    required = calls(question, Offer(OFFER.tools, "required"))
    assert [name for name, _ in required] == ["get_weather"]  # the first offered
    named = calls(question, Offer(OFFER.tools, "named", "everything__echo"))
    assert named == [("everything__echo", {"message": "How warm is it in Paris?"})]


@pytest.mark.parametrize("history", [openai_history(), ollama_history()])
def test_after_the_results_the_reply_quotes_them_and_calls_nothing(
    history: list[dict[str, Any]],
) -> None:
    turn = plan_turn(SimulatorConfig(), history, OFFER, think=True)
    assert turn.calls == ()
    content = "".join(turn.script.content)
    assert "`get_weather` returned" in content
    assert f"> {RESULT}" in content
    assert "get_weather" in "".join(turn.script.thinking)


def test_a_long_result_is_quoted_in_part() -> None:
    history = openai_history()
    history[-1]["content"] = [{"type": "text", "text": "word " * 1000}]
    content = "".join(
        plan_turn(SimulatorConfig(), history, OFFER, think=False).script.content
    )
    assert content.count("word") < 150 and "…" in content


def test_a_scripted_round_per_reply_then_the_answer() -> None:
    script = [
        [{"name": "get_weather", "arguments": {"location": "Rome"}, "id": "c1"}],
        [
            {"name": "nope", "arguments": '{"q": "unclosed'},
            {"name": "everything__echo"},
        ],
    ]
    first = plan_turn(SimulatorConfig(tool_script=script), ask("hi"), OFFER, think=True)
    assert [(c.name, c.arguments, c.id) for c in first.calls] == [
        ("get_weather", '{"location": "Rome"}', "c1")
    ]
    second = calls(openai_history(), tool_script=script)
    assert second == [("nope", '{"q": "unclosed'), ("everything__echo", {})]
    two_rounds = [
        *openai_history(),
        *openai_history()[1:],  # the second reply's calls and results
    ]
    assert calls(two_rounds, tool_script=script) == []
    assert calls(two_rounds, tool_script=script, tool_loop=True) == second


def test_a_new_question_starts_the_rounds_again() -> None:
    history = [*openai_history(), {"role": "assistant", "content": "Sunny."}]
    assert calls([*history, *ASK_WEATHER]) == [("get_weather", WEATHER_ARGS)]


def test_calls_are_planned_the_same_each_time_with_ids_per_call() -> None:
    plan = plan_turn(SimulatorConfig(), ASK_BOTH, OFFER, think=True)
    again = plan_turn(SimulatorConfig(), ASK_BOTH, OFFER, think=True)
    assert plan == again
    ids = {c.made_id("call_", 8) for c in plan.calls}
    assert len(ids) == 2 and all(len(i) == 13 for i in ids)
    assert (
        plan_turn(SimulatorConfig(), ASK_BOTH, OFFER, think=False).script.thinking == ()
    )


@pytest.mark.parametrize(
    ("schema", "question", "expected"),
    [
        (
            {
                "properties": {"a": {"type": "number"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
            "use add for 2.5 and 40",
            {"a": 2.5, "b": 40},
        ),
        (
            {"properties": {"url": {"type": "string"}}, "required": ["url"]},
            "Use fetch on https://example.org/page?x=1, please.",
            {"url": "https://example.org/page?x=1"},
        ),
        (
            {"properties": {"target": {"type": "string", "format": "uri"}}},
            "use fetch",  # nothing required: the first property still
            {"target": "https://example.com/"},
        ),
        (
            {
                "properties": {
                    "unit": {"enum": ["celsius", "fahrenheit"]},
                    "verbose": {"type": "boolean"},
                    "limit": {"type": "integer", "default": 5},
                    "mode": {"const": "fast"},
                },
                "required": ["unit", "verbose", "limit", "mode"],
            },
            "use fetch in Fahrenheit",
            {"unit": "fahrenheit", "verbose": True, "limit": 5, "mode": "fast"},
        ),
        (
            {
                "properties": {
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "filter": {
                        "type": "object",
                        "properties": {"count": {"type": ["integer", "null"]}},
                        "required": ["count"],
                    },
                },
                "required": ["tags", "filter"],
            },
            "Please use the fetch tool to find café menus",
            {"tags": ["find café menus"], "filter": {"count": 1}},
        ),
        (None, "use fetch", {}),
    ],
)
def test_arguments_from_a_schema(schema: Any, question: str, expected: Any) -> None:
    assert arguments_for(schema, question, ["fetch"]) == expected


def test_argument_pieces_join_back_to_the_json() -> None:
    text = json.dumps(
        {"query": "café  hours", "n": [1, 2.5], "ok": True}, ensure_ascii=False
    )
    pieces = json_pieces(text)
    assert "".join(pieces) == text
    assert pieces[:4] == ['{"', "query", '":', ' "']
    assert len(pieces) > 10


def test_the_script_is_checked_when_set() -> None:
    config = SimulatorConfig()
    update_config(config, {"tool_script": [[{"name": "x", "arguments": "{"}]]})
    assert config.tool_script == [[{"name": "x", "arguments": "{"}]]
    for bad in ([{"name": "x"}], [["x"]], [[{"name": 1}]], [[{"name": "x", "y": 1}]]):
        with pytest.raises(ConfigError):
            update_config(config, {"tool_script": bad})
    update_config(config, {"tool_script": None, "tool_loop": True})
    assert config.tool_script is None and config.tool_loop


def test_the_script_is_set_over_http(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    script = [[{"name": "get_weather", "arguments": {"location": "Rome"}}]]
    response = client.post("/_sim/config", json={"tool_script": script})
    assert response.status_code == 200 and response.json()["tool_script"] == script
    assert sim.config.tool_script == script
    bad = client.post("/_sim/config", json={"tool_script": [[{"arguments": {}}]]})
    assert bad.status_code == 400 and "a scripted call is" in bad.json()["error"]
    assert sim.config.tool_script == script
    sim.reset()
    assert sim.config.tool_script is None
