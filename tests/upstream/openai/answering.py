"""What the fake OpenAI-compatible server streams (its events and chunks) and
what the client reads of it, whole or through the stream reader, for the OpenAI
client's tests."""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import pytest

from chat.upstream import Delta, Event, Finished, OpenAIClient, UpstreamError
from chat.upstream.openai import StreamReader
from chat.upstream.thinktags import ThinkTagSplitter
from tests.upstream import mock_clients

BASE = "http://vllm.test:8000"
MODEL = "Qwen/Qwen3-8B"


def event(obj: object) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"


def chunk(finish: str | None = None, **delta: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": MODEL,
        "choices": [choice],
    }


USAGE = {"prompt_tokens": 26, "completion_tokens": 282, "total_tokens": 308}


def decode(
    reads: list[bytes], *, splitter: ThinkTagSplitter | None = None
) -> tuple[list[Event], UpstreamError | None, StreamReader]:
    """The events of a whole body read in `reads`, and the error it ends with."""
    reader = StreamReader(
        BASE, splitter if splitter is not None else ThinkTagSplitter()
    )
    events: list[Event] = []
    for data in reads:
        got, error = reader.feed(data)
        events += got
        if error is not None:
            return events, error, reader
        if reader.finished:
            return events, None, reader
    got, error = reader.close()
    return events + got, error, reader


def text(events: list[Event], kind: str) -> str:
    return "".join(e.text for e in events if isinstance(e, Delta) and e.kind == kind)


STOP = Finished(done_reason="stop")


async def collect(client: OpenAIClient, **kwargs: Any) -> list[list[Event]]:
    return await mock_clients.collect(client, MODEL, **kwargs)


async def collect_until_error(
    client: OpenAIClient, **kwargs: Any
) -> tuple[list[list[Event]], UpstreamError]:
    batches: list[list[Event]] = []
    with pytest.raises(UpstreamError) as info:
        await collect_into(client, batches, **kwargs)
    return batches, info.value


async def collect_into(
    client: OpenAIClient, batches: list[list[Event]], **kwargs: Any
) -> None:
    kwargs = {"think": None, "options": {}, **kwargs}
    async with aclosing(
        client.chat(MODEL, [{"role": "user", "content": "hi"}], **kwargs)
    ) as stream:
        async for batch in stream:
            batches.append(batch)
