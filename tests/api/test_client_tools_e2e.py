"""A client's own tools end to end: the official `openai` and `ollama` clients
against the live server, the simulator as the model server (on either of its
sides: Ollama's `/api/chat` and the OpenAI-compatible `/v1`). The model's calls
stream back in the client's dialect, nothing is run by the site, the answer
ends with the model's first reply (`done_reason` "tool_calls") and keeps its
calls in its steps; the client sends the results and the next answer quotes
them. `tool_choice` "required" and named, `parallel_tool_calls: false`, and
a model writing malformed arguments. The answers count in the quotas and the
throughput figures as a socket's turns do."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import ollama
import openai
import pytest
from django.utils import timezone
from openai.lib.streaming.chat import ChatCompletionStreamState

from chat.models import Message, SiteDefaults, quotas
from chat.ops import throughput
from tests.api.client_tools import TIME, WEATHER, get_weather
from tests.api.conftest import MODEL, api_answers
from tests.api.openai_client.asking import ask
from tests.support.waiting import until_sync

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "Use get_weather for Paris please"
Q = [{"role": "user", "content": QUESTION}]
RESULT = "Rain, 4 C"


@pytest.fixture(params=["ollama", "openai"])
def upstream(request, demo_profile, simulator):
    """The demo model on each side of the simulator (the site's model-server
    client reads its calls from Ollama's whole calls or vLLM's deltas)."""
    if request.param == "openai":
        demo_profile.backend = "openai"
        demo_profile.base_url = simulator.url + "/v1"
        demo_profile.save()
    return request.param


def ended(count: int) -> list[Message]:
    """The API answers, once `count` of them ended (final saves landed)."""

    def done() -> list[Message] | None:
        answers = api_answers()
        if len(answers) < count or any(
            a.status == Message.Status.STREAMING for a in answers
        ):
            return None
        return answers

    return until_sync(done, f"{count} API answers did not end")


def tool_parts(answer: Message) -> list[dict[str, Any]]:
    return [part for part in answer.steps if part["kind"] == "tool"]


def assert_handed_over(answer: Message, *names: str) -> list[dict[str, Any]]:
    """The answer ended with the model's calls, kept in its steps as given
    to the client (nothing run here), counted as one model call."""
    assert answer.status == Message.Status.DONE
    assert answer.done_reason == "tool_calls"
    calls = tool_parts(answer)
    assert [c["name"] for c in calls] == list(names)
    for call in calls:
        assert call["source"] == "client"
        assert call["ok"] is True and call["error"] is None
        assert call["text"] == "" and call["ms"] == 0.0
    assert answer.model_calls == 1 and answer.tool_ms == 0.0
    assert answer.first_token_ms is not None
    return calls


def offered_names(entry: Any) -> list[str]:
    return [tool["function"]["name"] for tool in entry.body.get("tools") or ()]


def test_openai_streamed_round_trip(oa, upstream, simulator):
    simulator.config.tps = 100  # a token a read: the pieces apart
    chunks = list(ask(oa, messages=Q, tools=[WEATHER], stream=True))
    state = ChatCompletionStreamState(input_tools=[WEATHER])
    for chunk in chunks:
        state.handle_chunk(chunk)
    [choice] = state.get_final_completion().choices
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls or ()
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    # The arguments came in pieces, as the model wrote them (vLLM's deltas;
    # Ollama gives a call whole).
    pieces = [
        c.function.arguments
        for chunk in chunks
        for ch in chunk.choices
        for c in ch.delta.tool_calls or ()
        if c.function and c.function.arguments
    ]
    assert len(pieces) > 1 if upstream == "openai" else len(pieces) == 1
    # The model server was offered the client's tools as given, once.
    [entry] = simulator.asked
    assert offered_names(entry) == ["get_weather"]
    [answer] = ended(1)
    [part] = assert_handed_over(answer, "get_weather")
    assert part["id"] == call.id
    assert part["arguments"] == call.function.arguments

    # The client ran it and sends the result: the next answer quotes it.
    messages = [
        *Q,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": RESULT},
    ]
    again = list(ask(oa, messages=messages, tools=[WEATHER], stream=True))
    assert again[-1].choices[0].finish_reason == "stop"
    text = "".join(c.choices[0].delta.content or "" for c in again if c.choices)
    assert RESULT in text
    sent = simulator.asked[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert ended(2)[1].done_reason == "stop"


def test_openai_whole_round_trip(oa, upstream, simulator):
    completion = ask(oa, messages=Q, tools=[WEATHER], stream=False)
    [choice] = completion.choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    [call] = choice.message.tool_calls or ()
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert completion.usage is not None and completion.usage.completion_tokens > 0
    messages = [
        *Q,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": RESULT},
    ]
    again = ask(oa, messages=messages, tools=[WEATHER], stream=False)
    assert again.choices[0].finish_reason == "stop"
    assert RESULT in again.choices[0].message.content
    first, second = ended(2)
    assert_handed_over(first, "get_weather")
    assert second.steps == [] or not tool_parts(second)


def test_ollama_streamed_and_whole_round_trip(ol, upstream, simulator):
    parts = list(ol.chat(model=MODEL, messages=Q, tools=[get_weather], stream=True))
    calls = [c for p in parts for c in p.message.tool_calls or ()]
    assert [(c.function.name, dict(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert parts[-1].done and parts[-1].done_reason == "stop"  # Ollama's own
    whole = ol.chat(model=MODEL, messages=Q, tools=[get_weather], stream=False)
    assert whole.message.tool_calls is not None
    assert whole.message.tool_calls[0].function.name == "get_weather"
    result = ollama.Message(role="tool", tool_name="get_weather", content=RESULT)
    again = ol.chat(
        model=MODEL, messages=[*Q, whole.message, result], tools=[get_weather]
    )
    assert RESULT in again.message.content
    answers = ended(3)
    assert_handed_over(answers[0], "get_weather")
    assert_handed_over(answers[1], "get_weather")
    assert answers[2].done_reason == "stop"


def test_tool_choice_required_and_named(oa, upstream, simulator):
    # The question names no tool: "required" makes the model call one.
    plain = [{"role": "user", "content": "What should I wear today?"}]
    named = {"type": "function", "function": {"name": "get_time"}}
    tools = [WEATHER, TIME]
    required = ask(oa, messages=plain, tools=tools, tool_choice="required")
    sent = simulator.asked[-1].body
    forced = ask(oa, messages=plain, tools=tools, tool_choice=named)
    first, second = ended(2)
    if upstream == "ollama":
        # Ollama has no tool_choice: the tools are offered, the model chooses.
        assert "tool_choice" not in sent
        assert offered_names(simulator.asked[-1]) == ["get_weather", "get_time"]
        assert required.choices[0].finish_reason == "stop"
        assert first.done_reason == "stop" and not tool_parts(first)
        return
    assert sent["tool_choice"] == "required"
    [call] = required.choices[0].message.tool_calls or ()
    assert call.function.name == "get_weather"  # the first offered
    assert simulator.asked[-1].body["tool_choice"] == named
    [call] = forced.choices[0].message.tool_calls or ()
    assert call.function.name == "get_time"
    assert_handed_over(first, "get_weather")
    assert_handed_over(second, "get_time")


def test_parallel_tool_calls_false_gives_and_keeps_the_first_call(
    oa, upstream, simulator
):
    both = [{"role": "user", "content": "Use get_weather, then get_time in Oslo"}]
    completion = ask(oa, messages=both, tools=[WEATHER, TIME])
    calls = completion.choices[0].message.tool_calls or ()
    assert [c.function.name for c in calls] == ["get_weather", "get_time"]
    chunks = list(
        ask(
            oa,
            messages=both,
            tools=[WEATHER, TIME],
            parallel_tool_calls=False,
            stream=True,
        )
    )
    state = ChatCompletionStreamState(input_tools=[WEATHER, TIME])
    for chunk in chunks:
        state.handle_chunk(chunk)
    [choice] = state.get_final_completion().choices
    assert [c.function.name for c in choice.message.tool_calls or ()] == ["get_weather"]
    assert choice.finish_reason == "tool_calls"
    first, second = ended(2)
    assert_handed_over(first, "get_weather", "get_time")
    assert_handed_over(second, "get_weather")  # what the client got


MALFORMED = '{"city": "Par'


def test_malformed_arguments(oa, ol, upstream, simulator):
    simulator.config.tool_script = [[{"name": "get_weather", "arguments": MALFORMED}]]
    # OpenAI's way: the text the model wrote, for the client to parse.
    completion = ask(oa, messages=Q, tools=[WEATHER])
    [call] = completion.choices[0].message.tool_calls or ()
    assert call.function.name == "get_weather"
    assert call.function.arguments.startswith(MALFORMED)
    # Ollama's clients take only objects: a clear error, not a call.
    with pytest.raises(ollama.ResponseError) as caught:
        ol.chat(model=MODEL, messages=Q, tools=[get_weather], stream=False)
    assert caught.value.status_code == 502
    assert "get_weather" in caught.value.error
    first, second = ended(2)
    [part] = assert_handed_over(first, "get_weather")
    assert part["arguments"].startswith(MALFORMED)
    assert tool_parts(second)[0]["arguments"].startswith(MALFORMED)


def test_counted_in_quotas_and_throughput_as_a_socket_turn(
    oa, alice, upstream, simulator
):
    site = SiteDefaults.load()
    site.user_answers, site.user_output_tokens = 1, 100_000
    site.save()
    ask(oa, messages=Q, tools=[WEATHER])
    [answer] = ended(1)
    assert_handed_over(answer, "get_weather")
    assert answer.output_tokens  # the model server's count
    # One answer of the user's quota, and its tokens: the next one is refused.
    used = {limit.kind: limit.used for limit in quotas.limits_for(alice)}
    assert used == {quotas.ANSWERS: 1, quotas.TOKENS: answer.output_tokens}
    with pytest.raises(openai.RateLimitError) as caught:
        ask(oa, messages=Q, tools=[WEATHER])
    assert caught.value.code == "quota_reached"
    # On the throughput page with its figures, as an API answer.
    now = timezone.now()
    window = throughput.Window(start=now - timedelta(hours=1), end=now)
    [row] = throughput.summary(window)
    assert (row["answers"], row["api_answers"]) == (1, 1)
    assert row["output_tokens"] == answer.output_tokens
    assert row["ttft_ms_p50"] == pytest.approx(answer.first_token_ms)
    assert row["decode_tps_p50"] > 0
