from __future__ import annotations

import asyncio

import pytest
from channels.layers import InMemoryChannelLayer

from chat.fanout import Publisher, RemoteView, conversation_group, spans_processes


def test_remote_view_drops_overlap_and_reports_gaps():
    view = RemoteView(content=5)
    assert view.take("content", 0, "hello") == ""
    assert view.take("content", 3, "lo world") == " world"
    assert view.take("content", 11, "!") == "!"
    assert view.take("content", 20, "later") is None
    assert view.have == {"thinking": 0, "content": 12}
    assert view.take("thinking", 0, "hmm") == "hmm"


def test_only_real_layers_span_processes():
    assert not spans_processes(None)
    assert not spans_processes(InMemoryChannelLayer())


async def test_publisher_merges_what_arrives_while_it_waits():
    layer = InMemoryChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add(conversation_group(7), channel)
    publisher = Publisher(layer, "me", 7, 42)
    task = asyncio.create_task(publisher.run())
    publisher.add("content", "a")
    first = await asyncio.wait_for(layer.receive(channel), 2)
    for piece in "bcd":  # arrives during the coalescing pause
        publisher.add("content", piece)
    second = await asyncio.wait_for(layer.receive(channel), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (first["start"], first["text"]) == (0, "a")
    assert (second["start"], second["text"]) == (1, "bcd")
    assert second["origin"] == "me" and second["message_id"] == 42
