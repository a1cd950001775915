"""The in-memory answer (`chat.live.engine.generation`), without a server: the frames
one
network read becomes, the figures, and a socket caught up while text arrives."""

from __future__ import annotations

from typing import Any

from chat.live.engine.generation import Generation
from chat.models import Message
from chat.upstream import Delta, Finished, UpstreamError


def generation(**fields: Any) -> Generation:
    return Generation(7, Message(pk=42), "qwen3:4b", True, **fields)


class Sink:
    """A socket stand-in: the frames it was sent, in order."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    async def send_frame(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)

    def text(self, kind: str) -> str:
        return "".join(f["delta"] for f in self.frames if f["type"] == kind)

    def types(self) -> list[str]:
        return [f["type"] for f in self.frames]


async def relay(g: Generation, *events: Delta | Finished) -> None:
    """What the runner's relay does with one network read."""
    for frame in g.apply(events):
        for sink in list(g.attached):
            await sink.send_frame(frame)


def test_one_read_becomes_one_frame_per_run_of_a_kind_in_arrival_order():
    g = generation()
    out = g.apply(
        [
            Delta("thinking", "Let "),
            Delta("thinking", "me"),
            Delta("content", "Hel"),
            Delta("content", "lo"),
            Delta("thinking", "!"),
        ]
    )
    assert out == [
        {"type": "thinking", "message_id": 42, "delta": "Let me", "tokens": 2},
        {"type": "content", "message_id": 42, "delta": "Hello", "tokens": 2},
        {"type": "thinking", "message_id": 42, "delta": "!"},
    ]
    assert g.thinking_text() == "Let me!" and g.content_text() == "Hello"
    assert g.lengths() == (7, 5)
    assert g.finished is None


def test_lengths_count_code_points_the_unit_of_resume_offsets():
    g = generation()
    g.apply([Delta("content", "é🙂"), Delta("content", "x")])
    assert g.lengths() == (0, 3)
    assert g.tail("content", 1) == "🙂x"


def test_finished_ends_the_read_without_a_frame_of_its_own():
    g = generation()
    end = Finished("stop", output_tokens=2)
    assert g.apply([Delta("content", "ok"), end]) == [
        {"type": "content", "message_id": 42, "delta": "ok"}
    ]
    assert g.finished is end
    assert g.apply([end]) == []


def test_figures_are_measured_from_the_request_to_the_model_server():
    g = generation(requested_at=100.0, upstream_at=100.5)
    g.apply([Delta("thinking", "hm", replaced=1)])
    g.first_token_at = 101.0
    g.apply([Delta("content", "yes")])
    g.first_answer_at = 103.0
    figures = g.figures()
    assert figures["queue_wait_ms"] == 500.0
    assert figures["first_token_ms"] == 500.0
    assert figures["first_answer_token_ms"] == 2500.0
    assert figures["thinking_ms"] == 2000.0
    assert figures["total_ms"] > 2500.0
    assert figures["replaced_chars"] == 1
    assert "done_reason" not in figures


def test_figures_without_thinking_or_tokens_are_none():
    figures = generation(requested_at=10.0).figures()
    assert figures["queue_wait_ms"] == 0.0
    assert figures["first_token_ms"] is None
    assert figures["first_answer_token_ms"] is None
    assert figures["thinking_ms"] is None


def test_the_servers_figures_come_with_the_finish():
    g = generation()
    g.apply(
        [
            Delta("content", "a"),
            Finished(
                "length",
                prompt_tokens=11,
                prompt_eval_ms=1.5,
                output_tokens=1,
                eval_ms=2.5,
                load_ms=None,
            ),
        ]
    )
    g.loaded(30.0)  # the watch's figure stands in for the server's missing one
    figures = g.figures()
    assert figures["done_reason"] == "length"
    assert (figures["prompt_tokens"], figures["output_tokens"]) == (11, 1)
    assert (figures["prompt_eval_ms"], figures["eval_ms"]) == (1.5, 2.5)
    assert figures["load_ms"] == 30.0


def test_the_first_token_watch_tells_it_through_methods():
    g = generation()
    assert g.awaits_first_token()
    error = UpstreamError("upstream_timeout", "no first token")
    g.fail(error)
    assert g.failure is error
    g.apply([Delta("content", "late")])
    assert not g.awaits_first_token()


def test_start_and_queued_frames():
    g = generation()
    assert g.start_frame() == {
        "type": "start",
        "message_id": 42,
        "model": "qwen3:4b",
        "thinking": True,
    }
    assert g.queued_frame() is None
    g.queue_position = 2
    assert g.queued_frame() == {"type": "queued", "message_id": 42, "position": 2}


def test_a_resume_from_beyond_the_text_is_refused():
    g = generation()
    g.apply([Delta("thinking", "ab"), Delta("content", "cd")])
    assert g.past_the_text(2, 2) is None
    refusal = g.past_the_text(0, 3)
    assert refusal is not None and refusal["code"] == "bad_offset"
    refused = g.past_the_text(3, 0)
    assert refused is not None and refused["message_id"] == 42


async def test_a_refused_resume_is_told_and_not_attached():
    g = generation()
    g.apply([Delta("content", "ab")])
    sink = Sink()
    await g.resume(sink, 5, 0)
    assert sink.types() == ["error"]
    assert sink not in g.attached


async def test_a_resume_sends_the_text_after_the_offsets_then_attaches():
    g = generation(queue_position=None)
    g.apply([Delta("thinking", "think"), Delta("content", "Hello")])
    sink = Sink()
    await g.resume(sink, 2, 1)
    assert sink.types() == ["start", "thinking", "content"]
    assert (sink.text("thinking"), sink.text("content")) == ("hink", "llo")
    assert sink in g.attached and not g.catching_up
    await relay(g, Delta("content", "!"))
    assert sink.text("content") == "llo!"


async def test_a_queued_answer_resumes_with_its_place_in_line():
    g = generation(queue_position=3)
    sink = Sink()
    await g.resume(sink, 0, 0)
    assert sink.frames[1] == {"type": "queued", "message_id": 42, "position": 3}


class TextArrivesDuringSends(Sink):
    """A slow socket: each of its writes lets the model's next reads through,
    so the text grows while it is being caught up."""

    def __init__(self, g: Generation, reads: list[list[Delta]]) -> None:
        super().__init__()
        self.g, self.reads = g, reads

    async def send_frame(self, frame: dict[str, Any]) -> None:
        await super().send_frame(frame)
        if self.reads:
            await relay(self.g, *self.reads.pop(0))


async def test_text_arriving_during_a_catch_up_is_sent_exactly_once():
    g = generation()
    g.apply([Delta("thinking", "I think"), Delta("content", "Once upon")])
    reads = [
        [Delta("content", " a")],
        [Delta("thinking", " twice"), Delta("content", " time")],
        [Delta("content", ",")],
        [Delta("thinking", "!")],
        [Delta("content", " there")],
    ]
    sink = TextArrivesDuringSends(g, reads)
    await g.resume(sink, 5, 2)
    assert not reads, "the catch-up ended before the text stopped growing"
    assert sink in g.attached
    # After attaching, the relay's own frames reach it (and nothing twice).
    await relay(g, Delta("content", " was"), Finished("stop"))
    assert sink.text("content") == g.content_text()[5:] == "upon a time, there was"
    assert sink.text("thinking") == g.thinking_text()[2:] == "think twice!"


async def test_an_answer_ending_during_a_catch_up_sends_its_final_frames():
    g = generation()
    g.apply([Delta("content", "abc")])
    done = {"type": "done", "message_id": 42, "status": "done", "stats": {}}

    class EndsDuringSends(Sink):
        async def send_frame(self, frame: dict[str, Any]) -> None:
            await super().send_frame(frame)
            if g.closing is None:
                await relay(g, Delta("content", "d"))
                g.closing = [done]

    sink = EndsDuringSends()
    await g.resume(sink, 0, 0)
    assert sink.types() == ["start", "content", "done"]
    assert sink.text("content") == "abcd"
    assert sink not in g.attached


async def test_a_socket_already_attached_or_catching_up_is_sent_nothing_again():
    g = generation()
    g.apply([Delta("content", "abc")])
    sink = Sink()
    g.attach(sink)
    await g.resume(sink, 0, 0)
    assert sink.frames == []
    other = Sink()
    g.catching_up.add(other)
    await g.resume(other, 0, 0)
    assert other.frames == []


async def test_a_detached_socket_hears_no_more_deltas():
    g = generation()
    sink = Sink()
    g.attach(sink)
    await relay(g, Delta("content", "a"))
    g.detach(sink)
    await relay(g, Delta("content", "b"))
    assert sink.text("content") == "a"
