"""The tool calls a model writes for an API client, as each dialect gives them
back: the sink (`chat.api.answers.ApiAnswer`) fed the engine's frames of a
call (`tool_call`, then its `tool_args`, then `done`), and the response read
by the official clients' own models: OpenAI's streamed chunks accumulated by
the `openai` package's stream state (ids, names, argument pieces,
`finish_reason: "tool_calls"`) and its `ChatCompletion`; Ollama's NDJSON lines
and object read as `ollama.ChatResponse` (whole calls, arguments an object).
A call whose arguments are not a JSON object is Ollama's clear error, 502."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import ollama as ollama_client
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from chat.api import ollama, openai
from chat.api.answers import ApiAnswer
from chat.api.errors import ApiError
from chat.live.protocol import frames
from chat.models import ClientTools

BOUND = 10.0
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": "",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    for name in ("get_weather", "get_time")
]


def sink(*, parallel: bool = True) -> ApiAnswer:
    answer = SimpleNamespace(conversation_id=-1, pk=7, prompt_tokens_estimate=12)
    turn = SimpleNamespace(
        answer=answer,
        profile=SimpleNamespace(tag="qwen3:8b"),
        client_tools=ClientTools(TOOLS, None, parallel),
    )
    return ApiAnswer(turn)


async def call(answer: ApiAnswer, call_id: str, name: str, *pieces: str) -> None:
    await answer.send_frame(
        {
            "type": "tool_call",
            "message_id": 7,
            "call_id": call_id,
            "name": name,
            "title": name,
            "source": "client",
        }
    )
    for piece in pieces:
        await answer.send_frame(
            {"type": "tool_args", "message_id": 7, "call_id": call_id, "delta": piece}
        )


async def done(answer: ApiAnswer, reason: str = "tool_calls") -> None:
    stats = {"done_reason": reason, "prompt_tokens": 30, "output_tokens": 9}
    await answer.send_frame(
        {"type": "done", "message_id": 7, "status": "done", "stats": stats}
    )


async def two_calls(answer: ApiAnswer) -> None:
    await answer.send_frame(frames.delta("thinking", 7, "The user wants"))
    await call(answer, "call_a", "get_weather", '{"ci', 'ty": "Oslo"}')
    await call(answer, "call_b", "get_time", "{}")
    await done(answer)


async def drained(stream: Any) -> list[bytes]:
    return [piece async for piece in stream]


def sse_chunks(body: list[bytes]) -> list[ChatCompletionChunk]:
    events = b"".join(body).split(b"\n\n")
    assert events[-2:] == [b"data: [DONE]", b""]
    return [
        ChatCompletionChunk.model_validate_json(event.removeprefix(b"data: "))
        for event in events[:-2]
    ]


async def openai_stream(answer: ApiAnswer, fed: Any) -> list[ChatCompletionChunk]:
    stream = openai._events(answer, 1, include_usage=True)
    reading = asyncio.ensure_future(drained(stream))
    await fed(answer)
    return sse_chunks(await asyncio.wait_for(reading, BOUND))


async def test_openai_streams_each_call_then_its_argument_pieces():
    answer = sink()
    stream = openai._events(answer, 1, include_usage=False)
    assert await anext(stream)  # the first chunk: the role, nothing yet
    await call(answer, "call_a", "get_weather")
    first = json.loads((await asyncio.wait_for(anext(stream), BOUND))[6:])
    assert first["choices"][0]["delta"] == {
        "tool_calls": [
            {
                "index": 0,
                "id": "call_a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": ""},
            }
        ]
    }
    await call(answer, "call_a", "get_weather")  # a second start is ignored
    await answer.send_frame(
        {"type": "tool_args", "message_id": 7, "call_id": "call_a", "delta": '{"c'}
    )
    piece = json.loads((await asyncio.wait_for(anext(stream), BOUND))[6:])
    assert piece["choices"][0]["delta"] == {
        "tool_calls": [{"index": 0, "function": {"arguments": '{"c'}}]
    }
    await stream.aclose()


async def test_openai_streamed_calls_as_the_openai_client_accumulates_them():
    chunks = await openai_stream(sink(), two_calls)
    state = ChatCompletionStreamState(input_tools=TOOLS)
    for chunk in chunks:
        state.handle_chunk(chunk)
    [choice] = state.get_final_completion().choices
    assert choice.finish_reason == "tool_calls"
    assert [
        (c.id, c.function.name, c.function.arguments)
        for c in choice.message.tool_calls or ()
    ] == [("call_a", "get_weather", '{"city": "Oslo"}'), ("call_b", "get_time", "{}")]
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 9


async def test_openai_a_whole_answer_with_calls():
    answer = sink()
    await two_calls(answer)
    completion = ChatCompletion.model_validate(openai._completion(answer, 1))
    [choice] = completion.choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert [c.function.arguments for c in choice.message.tool_calls or ()] == [
        '{"city": "Oslo"}',
        "{}",
    ]


async def test_openai_a_call_cut_at_the_token_limit_ends_for_length():
    answer = sink()
    await call(answer, "call_a", "get_weather", '{"ci')
    await done(answer, "length")
    completion = ChatCompletion.model_validate(openai._completion(answer, 1))
    assert completion.choices[0].finish_reason == "length"
    # OpenAI's arguments are the text the model wrote, valid JSON or not.
    assert completion.choices[0].message.tool_calls[0].function.arguments == '{"ci'


async def test_an_answer_without_calls_still_stops():
    answer = sink()
    await answer.send_frame(frames.delta("content", 7, "Hello."))
    await done(answer, "stop")
    completion = ChatCompletion.model_validate(openai._completion(answer, 1))
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.tool_calls is None
    assert completion.choices[0].message.content == "Hello."


async def test_parallel_tool_calls_false_gives_the_first_call_only():
    chunks = await openai_stream(sink(parallel=False), two_calls)
    calls = [
        c for chunk in chunks for ch in chunk.choices for c in ch.delta.tool_calls or ()
    ]
    assert {c.index for c in calls} == {0}
    assert "".join(c.function.arguments or "" for c in calls) == '{"city": "Oslo"}'


async def test_ollama_streams_whole_calls_with_arguments_as_objects():
    answer = sink()
    reading = asyncio.ensure_future(drained(ollama._lines(answer)))
    await two_calls(answer)
    lines = b"".join(await asyncio.wait_for(reading, BOUND)).splitlines()
    responses = [ollama_client.ChatResponse.model_validate_json(line) for line in lines]
    calls = [c for r in responses for c in r.message.tool_calls or ()]
    assert [(c.function.name, dict(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Oslo"}),
        ("get_time", {}),
    ]
    assert responses[-1].done is True
    assert responses[-1].done_reason == "stop"  # as Ollama ends a reply with calls
    # Each call in one line, once whole: none split, none twice.
    assert all(len(r.message.tool_calls or ()) <= 2 for r in responses)
    assert json.loads(lines[-2])["message"]["tool_calls"][-1]["function"] == {
        "index": 1,
        "name": "get_time",
        "arguments": {},
    }


async def test_ollama_gives_a_call_once_the_next_begins():
    answer = sink()
    await call(answer, "call_a", "get_weather", '{"city": "Oslo"}')
    assert answer.whole_calls() == []  # its arguments may go on
    await call(answer, "call_b", "get_time")
    assert [c.id for c in answer.whole_calls()] == ["call_a"]
    assert answer.whole_calls() == []


async def test_ollama_a_whole_answer_with_calls():
    answer = sink()
    await two_calls(answer)
    response = ollama_client.ChatResponse.model_validate(ollama._whole(answer))
    assert [c.function.name for c in response.message.tool_calls or ()] == [
        "get_weather",
        "get_time",
    ]
    assert response.message.thinking == "The user wants"
    assert response.eval_count == 9


@pytest.mark.parametrize("arguments", ['{"city": "Os', "[1, 2]", "null"])
async def test_ollama_malformed_arguments_are_a_clear_error(arguments):
    answer = sink()
    await call(answer, "call_a", "get_weather", arguments)
    await done(answer)
    with pytest.raises(ApiError) as caught:
        ollama._whole(answer)
    assert caught.value.status == 502
    assert caught.value.code == "malformed_tool_call"
    assert caught.value.message == (
        "The model called get_weather with arguments that are not a JSON object: "
        + arguments
    )
    answer = sink()
    reading = asyncio.ensure_future(drained(ollama._lines(answer)))
    await call(answer, "call_a", "get_weather", arguments)
    await done(answer)
    lines = b"".join(await asyncio.wait_for(reading, BOUND)).splitlines()
    assert json.loads(lines[-1]) == {"error": caught.value.message}


async def test_calls_count_in_the_output_estimate():
    answer = sink()
    await call(answer, "call_a", "get_weather", "x" * 40)
    assert answer.usage() == (12, 10)
