"""The hot path (`chat.live.engine.relay`) with a stand-in model server and socket: each
network read is one frame per kind, written before the next read; the stream is
closed when the answer is whole; a stream cut short is an error."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from chat.live.engine import relay as relay_module
from chat.live.engine.generation import Generation
from chat.models import Message
from chat.upstream import Delta, Finished, UpstreamError


class Sink:
    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    async def send_frame(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)


class Server:
    """A model server whose stream yields the given reads, and records what the
    relay had written to `sink` before each read, and whether it was closed."""

    def __init__(self, reads: list[list[Any]], sink: Sink) -> None:
        self.reads, self.sink = reads, sink
        self.before: list[int] = []
        self.closed = False

    def chat(self, tag: str, history: Any, **options: Any) -> Any:
        async def stream() -> Any:
            try:
                for read in self.reads:
                    self.before.append(len(self.sink.frames))
                    yield read
            finally:
                self.closed = True

        return stream()


PROFILE = SimpleNamespace(
    tag="m", keep_alive_value=None, request_options=lambda think: {}
)


@pytest.fixture
def served(monkeypatch):
    """Run the relay against a `Server` (no first-token watch: no model server
    to ask whether the model is loaded)."""

    async def run(reads: list[list[Any]]) -> tuple[Generation, Sink, Server]:
        sink = Sink()
        server = Server(reads, sink)
        monkeypatch.setattr(relay_module, "client_for", lambda profile: server)
        watch = SimpleNamespace(cancel=lambda: None)
        monkeypatch.setattr(relay_module.first_token, "watch", lambda *args: watch)
        g = Generation(1, Message(pk=9), "m", None)
        g.attach(sink)

        async def tell(conversation_id: int, frame: dict[str, Any]) -> None:
            raise AssertionError("nothing to tell without the watch")

        await relay_module.relay(g, PROFILE, [], tell)  # type: ignore[arg-type]
        return g, sink, server

    return run


async def test_each_read_is_one_frame_per_kind_written_before_the_next(served):
    g, sink, server = await served(
        [
            [Delta("thinking", "a"), Delta("thinking", "b"), Delta("content", "c")],
            [Delta("content", "d"), Delta("content", "e")],
            [Finished("stop")],
            [Delta("content", "never read")],
        ]
    )
    assert [(f["type"], f["delta"]) for f in sink.frames] == [
        ("thinking", "ab"),
        ("content", "c"),
        ("content", "de"),
    ]
    assert server.before == [0, 2, 3]  # and no fourth read
    assert server.closed
    assert g.content_text() == "cde" and g.finished == Finished("stop")


async def test_a_stream_that_ends_before_the_finish_is_cut(served):
    with pytest.raises(UpstreamError) as cut:
        await served([[Delta("content", "half")]])
    assert cut.value.code == "stream_cut"
