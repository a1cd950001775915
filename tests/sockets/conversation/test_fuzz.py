"""Hypothesis drives the conversation socket with arbitrary frame sequences.

Valid and invalid JSON, every frame type with random fields and sizes, binary
frames, floods, pauses that let answers stream, all against the simulator (which
is sometimes told to fail). Afterwards the database must be consistent and the
socket open, or closed with a documented code.

``FUZZ_EXAMPLES`` (default 25) sets how many sequences are tried.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat.live.engine.runner import runner
from chat.models import Conversation, Message
from chatsite.asgi import application
from tests.support.communicators import (
    ORIGIN,
    WebsocketCommunicator,
    connect,
    frames_until,
)
from tests.support.waiting import generations_ended, until

pytestmark = pytest.mark.django_db(transaction=True)

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


# ---------------------------------------------------------------- the test


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "25")),
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(actions, min_size=1, max_size=12),
    mode=simulator_modes,
    burst=st.sampled_from([40, 5]),
)
async def test_any_frame_sequence_leaves_a_consistent_database(
    steps, mode, burst, alice, demo_profile, simulator, django_settings_override
):
    django_settings_override(
        MESSAGE_MAX_CHARS=MESSAGE_MAX_CHARS,
        WS_FRAME_BURST=burst,
        WS_FLOOD_CLOSE_AFTER=20,
    )
    behaviour = {**QUICK_ANSWERS, **mode}
    for name, value in behaviour.items():
        setattr(simulator.config, name, value)

    conversation = await Conversation.objects.acreate(
        owner=alice, model_profile=demo_profile
    )
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.pk}/", headers=[ORIGIN]
    )
    communicator.scope["user"] = alice
    connected, _ = await communicator.connect()
    assert connected
    session = Session(communicator, conversation.pk)
    try:
        for step in steps:
            if session.closed_with is not None:
                break
            await session.act(step)
    finally:
        # The consumer handles its frames in order: once it has handled the
        # disconnect, every frame sent before has been handled too.
        await communicator.disconnect(timeout=20)
    await wait_until_idle(conversation.pk)
    await session.drain()
    check_frames(session)
    await check_database(session)


@pytest.fixture
def django_settings_override(settings):
    """Hypothesis reuses function fixtures across examples: set, don't yield."""

    def override(**values: Any) -> None:
        for name, value in values.items():
            setattr(settings, name, value)

    return override


def test_the_fuzzer_knows_every_documented_error_code():
    """The protocol page's list and the fuzzer's agree (so a new code is checked)."""
    from pathlib import Path

    docs = Path(__file__).resolve().parents[3] / "docs"
    protocol = (docs / "protocol.md").read_text()
    for code in ERROR_CODES - {"internal_error"}:
        assert f"`{code}`" in protocol, code


# ---------------------------------------------------------------- found by the fuzzer


async def test_stopping_twice_does_not_cut_short_the_final_save(
    alice, conversation, simulator
):
    simulator.config.tps = 100
    simulator.config.answer_tokens = 400
    communicator = await connect(alice, conversation)
    await communicator.send_json_to({"type": "send", "content": "Hi", "client_id": ""})
    await frames_until(communicator, "content")
    assert runner.stop(conversation.pk)
    for _ in range(20):  # the stop is being saved: a second one must wait
        await asyncio.sleep(0)
        runner.stop(conversation.pk)
    received = await frames_until(communicator, "done")
    final = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    assert received[-1]["status"] == "stopped"
    assert final["type"] == "message" and final["message"]["status"] == "stopped"
    answer = await Message.objects.aget(pk=final["message"]["id"])
    assert answer.status == Message.Status.STOPPED


async def test_a_nul_character_is_refused_not_a_crash(alice, conversation):
    communicator = await connect(alice, conversation)
    for frame in (
        {"type": "send", "content": "a\x00b"},
        {"type": "send", "content": "ok", "client_id": "\x00"},
    ):
        await communicator.send_json_to(frame)
        error = await communicator.receive_json_from(timeout=5)
        assert error["code"] == "bad_frame" and "NUL" in error["detail"]
    await communicator.disconnect()
    assert await conversation.messages.acount() == 0


@pytest.mark.parametrize("key", ["message_id", "offset", "thinking_offset"])
def test_numbers_past_the_databases_integers_are_refused(key):
    from chat.sockets.client_frames import FrameError, parse

    resume = {"type": "resume", "message_id": 1, "offset": 0, key: 2**63}
    with pytest.raises(FrameError) as refused:
        parse(json.dumps(resume))
    assert refused.value.code == "bad_frame" and key in refused.value.detail
    resume[key] = 2**63 - 1
    assert parse(json.dumps(resume))[key] == 2**63 - 1


async def test_stops_at_every_moment_leave_the_answer_saved_and_the_conversation_free(
    alice, conversation, simulator
):
    """Stops from the moment the answer starts (before its task has run, while it
    fails, while it is saved) until the conversation is free again."""
    simulator.config.status = 500
    communicator = await connect(alice, conversation)
    await communicator.send_json_to({"type": "send", "content": "Hi", "client_id": ""})
    await frames_until(communicator, "start")

    def freed() -> bool:
        if not runner.is_busy(conversation.pk):
            return True
        runner.stop(conversation.pk)
        return False

    # No pause between tries: a stop at every step of the answer's life.
    await until(freed, "the conversation stayed claimed", interval=0)
    answer = await Message.objects.filter(role="assistant").aget()
    assert answer.status in (Message.Status.ERROR, Message.Status.STOPPED)
    received = await frames_until(communicator, "done")
    await communicator.disconnect()
    assert received[-1]["status"] == answer.status


@pytest.mark.parametrize(
    "text",
    [
        "[" * 3000 + "]" * 3000,
        '{"type": "send", "content": ' + "[" * 3000 + "]" * 3000 + "}",
        '{"type": "send", "content": "a\\ud800b", "client_id": ""}',
        '{"type": "send", "content": "ok", "client_id": "\\udfff"}',
        '{"type": "edit", "message_id": 1, "content": "\\ud83d"}',
        '{"type": "stop", "\\ud800": 1}',
    ],
)
async def test_a_malformed_frame_is_refused_and_the_socket_stays_open(
    alice, conversation, simulator, text
):
    """Deep nesting and lone surrogates (in any string, read or ignored) are
    refused like any bad frame: the socket goes on and takes the next question."""
    communicator = await connect(alice, conversation)
    await communicator.send_to(text_data=text)
    error = await communicator.receive_json_from(timeout=5)
    assert error["type"] == "error" and error["code"] == "bad_frame", error
    await communicator.send_json_to(
        {"type": "send", "content": "still here", "client_id": ""}
    )
    received = await frames_until(communicator, "done")
    await communicator.disconnect()
    assert received[-1]["status"] == "done"
    assert await conversation.messages.filter(content="still here").aexists()
