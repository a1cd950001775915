"""What the fuzzer of the conversation socket (test_fuzz.py) sends and checks: the
documented frames, codes and statuses, the strategies of frame sequences, the fuzzed
socket and the checks of what it left behind."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import strategies as st

from chat.live.engine.runner import runner
from chat.models import Message
from tests.support.communicators import WebsocketCommunicator
from tests.support.waiting import generations_ended, until

MESSAGE_MAX_CHARS = 300
# What docs/protocol.md documents.
CLOSE_CODES = {4401, 4403, 4429}
SERVER_FRAMES = {"message", "start", "thinking", "content", "done", "error"}
SERVER_FRAMES |= {"conversation", "queued", "removed", "model"}
ERROR_CODES = {
    "bad_frame",
    "frame_too_large",
    "unknown_type",
    "empty_message",
    "message_too_long",
    "busy",
    "no_model",
    "not_found",
    "rate_limited",
    "upstream_unreachable",
    "upstream_timeout",
    "model_not_found",
    "thinking_unsupported",
    "bad_request",
    "upstream_busy",
    "upstream_error",
    "stream_cut",
    "malformed",
    "internal_error",
    "nothing_to_regenerate",
    "not_a_question",
    "queue_unavailable",
    "save_failed",
    "bad_offset",
}
FINAL_STATUSES = {
    Message.Status.DONE,
    Message.Status.STOPPED,
    Message.Status.ERROR,
    Message.Status.INTERRUPTED,
}

# ---------------------------------------------------------------- strategies

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
extra_fields = st.dictionaries(
    st.text(max_size=10).filter(lambda k: k != "type"), json_values, max_size=3
)
content = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["Hello", "  ", "", "\x00", "\ud7ff🙂", "a\ud800b", "\udfff"]),
    st.integers(MESSAGE_MAX_CHARS - 2, MESSAGE_MAX_CHARS + 2).map(lambda n: "x" * n),
    json_values,
)


def frame(kind: str, **fields: Any) -> st.SearchStrategy[tuple[str, Any]]:
    required = st.fixed_dictionaries({"type": st.just(kind), **fields})
    return st.tuples(
        st.just("json"),
        st.builds(lambda extra, base: {**extra, **base}, extra_fields, required),
    )


offsets = st.integers(-1, 400) | json_values
actions = st.one_of(
    frame(
        "send",
        content=content,
        client_id=st.text(max_size=70) | st.just("\udc80") | json_values,
    ),
    frame("send", content=st.just("Tell me something")),
    frame("stop"),
    frame("resume", message_id=st.integers(-1, 10**6) | json_values, offset=offsets),
    # A resume naming the latest answer, at a random offset.
    st.tuples(st.just("resume_latest"), st.integers(0, 400), st.integers(0, 400)),
    frame("regenerate"),
    st.tuples(st.just("json"), json_values),
    st.tuples(st.just("raw"), st.text(max_size=60)),
    # Nested deeper than the JSON decoder's recursion limit.
    st.tuples(st.just("raw"), st.integers(1, 5000).map(lambda n: "[" * n + "]" * n)),
    st.tuples(
        st.just("raw"),
        st.integers(-2, 2).map(lambda d: "y" * (MESSAGE_MAX_CHARS + 4096 + d)),
    ),
    st.tuples(st.just("bytes"), st.binary(max_size=30)),
    st.tuples(st.just("pause"), st.sampled_from([0.0, 0.02, 0.1, 0.3])),
    st.tuples(st.just("flood"), st.integers(1, 60)),
)
simulator_modes = st.sampled_from(
    [
        {},
        {},
        {"cut_after": 5},
        {"error_after": 3},
        {"malformed_after": 4},
        {"status": 500},
        {"status": 404},
        {"tps": 40.0, "answer_tokens": 200},
    ]
)

QUICK_ANSWERS = {
    "tps": 0.0,
    "ttft_ms": 5.0,
    "think_tokens": 3,
    "answer_tokens": 12,
    "cut_after": None,
    "error_after": None,
    "malformed_after": None,
    "status": None,
}

# ---------------------------------------------------------------- the socket


class Session:
    """One fuzzed socket: what was sent, what came back."""

    def __init__(self, communicator: WebsocketCommunicator, conversation_id: int):
        self.communicator = communicator
        self.conversation_id = conversation_id
        self.outputs: list[dict[str, Any]] = []
        self.closed_with: int | None = None
        self.sent_contents: set[str] = set()

    async def send_text(self, text: str) -> None:
        # send_to() refuses empty text, which a browser can send.
        await self.communicator.send_input({"type": "websocket.receive", "text": text})

    async def act(self, action: tuple[Any, ...]) -> None:
        kind = action[0]
        if kind == "json":
            value = action[1]
            if isinstance(value, dict) and isinstance(value.get("content"), str):
                self.sent_contents.add(value["content"])
            await self.send_text(json.dumps(value))
        elif kind == "resume_latest":
            latest = await Message.objects.filter(
                conversation_id=self.conversation_id, role="assistant"
            ).alast()
            message_id = latest.pk if latest else 1
            await self.send_text(
                json.dumps(
                    {
                        "type": "resume",
                        "message_id": message_id,
                        "offset": action[1],
                        "thinking_offset": action[2],
                    }
                )
            )
        elif kind == "raw":
            await self.send_text(action[1])
        elif kind == "bytes":
            message = {"type": "websocket.receive", "bytes": action[1]}
            await self.communicator.send_input(message)
        elif kind == "pause":
            await asyncio.sleep(action[1])
        elif kind == "flood":
            for _ in range(action[1]):
                await self.send_text('{"type": "stop"}')
        await self.drain()

    async def drain(self) -> None:
        """Collect what the consumer has sent so far, without waiting."""
        for _ in range(3):
            await asyncio.sleep(0)
        queue = self.communicator.output_queue
        while not queue.empty():
            self.record(queue.get_nowait())

    def record(self, output: dict[str, Any]) -> None:
        if output["type"] == "websocket.close":
            if self.closed_with is None:
                self.closed_with = output.get("code", 1000)
        else:
            self.outputs.append(json.loads(output["text"]))


async def wait_until_idle(conversation_id: int) -> None:
    """Stop what still runs, until the conversation is free (and its answer's
    after-work, which follows its final frames, is done)."""

    def stopped() -> bool:
        runner.stop(conversation_id)
        return not runner.is_busy(conversation_id)

    await until(stopped, "the answer never ended")
    await generations_ended()


# ---------------------------------------------------------------- checks


def check_frames(session: Session) -> None:
    for sent in session.outputs:
        assert sent["type"] in SERVER_FRAMES, sent
        if sent["type"] == "error":
            assert sent["code"] in ERROR_CODES, sent
            assert isinstance(sent["detail"], str) and sent["detail"], sent
    if session.closed_with is not None:
        assert session.closed_with in CLOSE_CODES


async def check_database(session: Session) -> None:
    messages = [
        m
        async for m in Message.objects.filter(
            conversation_id=session.conversation_id
        ).order_by("created_at", "pk")
    ]
    # Nothing left streaming once the runner is idle; failures say why.
    for message in messages:
        if message.role == "assistant":
            assert message.status in FINAL_STATUSES, message.status
            if message.status == Message.Status.ERROR:
                assert message.error_code and message.error_detail
        else:
            assert message.role == "user"
            assert message.content in session.sent_contents
            assert 0 < len(message.content) <= MESSAGE_MAX_CHARS
    # Every user message has at most one answer after it, and every answer a
    # question before it.
    roles = [m.role for m in messages]
    assert "assistant" not in roles[:1]
    for before, after in zip(roles, roles[1:], strict=False):
        assert (before, after) != ("assistant", "assistant"), roles
    # Every stored question was announced on the socket while it was open.
    if session.closed_with is None:
        echoed = {
            f["message"]["id"]
            for f in session.outputs
            if f["type"] == "message" and f["message"]["role"] == "user"
        }
        assert {m.pk for m in messages if m.role == "user"} == echoed
    # At most one answer per conversation is streaming, anywhere.
    streaming = Message.objects.filter(status=Message.Status.STREAMING)
    assert await streaming.acount() == 0
