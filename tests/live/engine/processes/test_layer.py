"""The channel layer under load and faults, on a real Redis: a small pool, a
Redis that is away, a crashed socket, and a Redis restarted (empty) mid-answer
with the viewer on another Daphne process (see chat/live/engine/processes/layer.py)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import signal
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import channel_layers, get_channel_layer

from chat.live.engine.generation import Generation
from chat.live.engine.processes import fanout
from chat.live.engine.processes.layer import RedisChannelLayer
from chat.live.engine.runner import runner
from chat.live.protocol import frames as server_frames
from chat.live.protocol.channel_events import conversation_group, generation_group
from chat.models import Conversation, Message, SiteDefaults, turn_rows
from chat.sockets.consumers import ChatConsumer
from tests.support.communicators import connect, frames_until, send, text_of
from tests.support.services import redis_server
from tests.support.services.daphnes import (
    Daphne,
    daphne_env,
    free_port,
    group_members,
    open_socket,
    start_all,
)
from tests.support.services.daphnes import send as ws_send
from tests.support.threads import in_thread

pytestmark = pytest.mark.django_db(transaction=True)

SOCKETS = 40


def redis_layer(settings: Any, test_mode: str, **host: Any) -> None:
    """The configured Redis layer, with `host` overriding its host's options."""
    if test_mode == "sqlite":
        pytest.skip("needs Redis")
    config = copy.deepcopy(settings.CHANNEL_LAYERS)
    config["default"]["CONFIG"]["hosts"][0].update(host)
    settings.CHANNEL_LAYERS = config
    channel_layers.backends.clear()


@pytest.fixture
def small_pool(settings, test_mode):
    redis_layer(settings, test_mode, max_connections=4)


@pytest.fixture
def redis_away(settings, test_mode):
    redis_layer(settings, test_mode, address=f"redis://127.0.0.1:{free_port()}/0")


async def until(check: Callable[[], Any], what: str, timeout: float = 60) -> None:
    """Poll `check` (sync or async) until it is true, with a bounded deadline."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


def left_nothing(conversation_ids: list[int]) -> bool:
    """No conversation claimed, no socket subscribed."""
    return not any(
        runner.is_busy(pk) or pk in runner._subscribers for pk in conversation_ids
    )


async def test_many_sockets_on_a_small_pool_all_stream_and_leave_nothing_behind(
    alice, demo_profile, simulator, small_pool
):
    """More concurrent Redis calls than the pool holds: they wait for a
    connection, no socket fails, no conversation stays busy, and closing all
    at once leaves their groups."""
    simulator.config.tps = 0
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 30
    site = await database_sync_to_async(SiteDefaults.load)()
    site.generations_per_user = 0
    await site.asave()
    conversations = [
        await Conversation.objects.acreate(owner=alice, model_profile=demo_profile)
        for _ in range(SOCKETS)
    ]
    ids = [c.pk for c in conversations]
    sockets = await asyncio.gather(*(connect(alice, c) for c in conversations))
    await asyncio.gather(*(send(s, f"question {i}") for i, s in enumerate(sockets)))
    streams = await asyncio.gather(
        *(frames_until(s, "done", timeout=120) for s in sockets)
    )
    await asyncio.gather(*(s.disconnect() for s in sockets))

    for conversation, frames in zip(conversations, streams, strict=True):
        answer = await conversation.messages.filter(role="assistant").aget()
        assert answer.status == "done"
        assert text_of(frames, "content") == answer.content != ""
    await until(lambda: left_nothing(ids), "a conversation stayed busy")
    await until(lambda: no_members(ids), "a closed socket stayed in its group")


async def no_members(conversation_ids: list[int]) -> bool:
    return await group_members(conversation_ids) == 0


async def has_members(conversation_ids: list[int]) -> bool:
    return not await no_members(conversation_ids)


async def test_a_socket_stays_usable_while_redis_is_away(
    alice, conversation, simulator, redis_away
):
    """Every channel-layer call fails: the socket opens, its own answer streams
    in-process, and closing it leaves nothing behind."""
    socket = await connect(alice, conversation)
    await send(socket, "still here?")
    frames = await frames_until(socket, "done", timeout=60)
    await socket.disconnect()

    answer = await conversation.messages.filter(role="assistant").aget()
    assert answer.status == "done"
    assert text_of(frames, "content") == answer.content != ""
    assert left_nothing([conversation.pk])


async def test_an_answer_whose_layer_calls_fail_frees_its_conversation(
    conversation, simulator, redis_away
):
    """The runner's group join fails (Redis away): the answer still runs, and
    the conversation is free once it ended."""
    turn = await database_sync_to_async(turn_rows.begin_turn)(conversation, "hello")
    assert runner.claim(conversation.pk)
    # Whatever happened, the conversation must not stay claimed.
    with contextlib.suppress(Exception):
        await runner.start(turn.profile, turn.answer, turn.history)
    await until(lambda: not runner.is_busy(conversation.pk), "left busy")
    answer = await Message.objects.aget(pk=turn.answer.pk)
    assert answer.status != "streaming"


async def test_a_crashed_socket_still_leaves_the_runner_and_its_group(
    alice, conversation, simulator, small_pool, monkeypatch
):
    async def crash(self: ChatConsumer, frame: Any) -> None:
        raise RuntimeError("a handler bug")

    monkeypatch.setattr(ChatConsumer, "handle", crash)
    socket = await connect(alice, conversation)
    await until(lambda: has_members([conversation.pk]), "never joined its group")
    await socket.send_json_to({"type": "stop"})
    with pytest.raises(RuntimeError):
        await socket.receive_from(timeout=10)
    assert left_nothing([conversation.pk])
    assert await group_members([conversation.pk]) == 0


async def test_a_lost_catch_up_is_asked_again_and_live_text_meanwhile_is_kept(
    alice, conversation, small_pool
):
    """A viewer resumes an answer that another process streams; the first
    request is lost (Redis restarted, say). The viewer asks again, and the
    live text that came meanwhile follows the catch-up, once and in order."""
    turn = await database_sync_to_async(turn_rows.begin_turn)(conversation, "hello")
    answer_id = turn.answer.pk
    layer = get_channel_layer()
    owner = await layer.new_channel()  # the other process's runner
    await layer.group_add(generation_group(conversation.pk), owner)
    viewer = await connect(alice, conversation)

    def delta(start: int, text: str) -> dict[str, Any]:
        return {
            "type": "chat.delta",
            "origin": "elsewhere",
            "message_id": answer_id,
            "kind": "content",
            "start": start,
            "text": text,
        }

    await viewer.send_json_to({"type": "resume", "message_id": answer_id, "offset": 5})
    async with asyncio.timeout(30):
        lost = await layer.receive(owner)
        await layer.group_send(conversation_group(conversation.pk), delta(12, "LMNOP"))
        again = await layer.receive(owner)
    assert lost["type"] == again["type"] == "generation.resume"
    assert again["offset"] == 5 and again["reply_to"] == lost["reply_to"]
    catchup = {
        "type": "chat.catchup",
        "origin": "elsewhere",
        "start": {"type": "start", "message_id": answer_id},
        "message_id": answer_id,
        "thinking": [0, ""],
        "content": [5, "fghijkl"],
    }
    await layer.send(again["reply_to"], catchup)
    await layer.send(again["reply_to"], catchup)  # the first request's late reply
    await layer.group_send(conversation_group(conversation.pk), delta(17, "QR"))
    frames = await frames_until(viewer, "content")
    while text_of(frames, "content") != "fghijklLMNOPQR":
        frames.append(await viewer.receive_json_from(timeout=15))
        assert len(text_of(frames, "content")) <= len("fghijklLMNOPQR"), frames
    await viewer.disconnect()
    assert [f["type"] for f in frames].count("start") == 1


class RestartableRedis:
    """A redis-server of this test's own, stopped and started again empty on
    the same port (as after a crash or a restart without persistence)."""

    def __init__(self) -> None:
        self.label, self.exe = redis_server._redis_candidates()[0]
        self.server = redis_server.start_redis(self.label, self.exe)
        self.url = self.server.url

    def restart(self, while_down: Callable[[], None]) -> None:
        self.server.stop()
        while_down()
        self.server = redis_server.start_redis(self.label, self.exe, self.server.port)

    def stop(self) -> None:
        self.server.stop()


@pytest.fixture
def own_redis(test_mode):
    if test_mode == "sqlite":
        pytest.skip("needs Redis")
    server = RestartableRedis()
    yield server
    server.stop()


@pytest.fixture
def two_daphnes(own_redis, tmp_path, simulator):
    env = daphne_env(redis_url=own_redis.url)
    daphnes = start_all([Daphne(env, tmp_path / f"daphne-{i}.log") for i in range(2)])
    yield daphnes
    for daphne in daphnes:
        daphne.stop(signal.SIGKILL)


async def content_until(ws: Any, have: list[dict[str, Any]], chars: int) -> None:
    """Read `ws` into `have` until its content text is `chars` long."""
    async with asyncio.timeout(60):
        while len(text_of(have, "content")) < chars:
            frame = json.loads(await ws.recv())
            have.append(frame)
            assert frame["type"] != "done", frame


async def frames_to(ws: Any, have: list[dict[str, Any]], kind: str) -> None:
    async with asyncio.timeout(60):
        while not have or have[-1]["type"] != kind:
            have.append(json.loads(await ws.recv()))


async def test_a_redis_restart_mid_answer_keeps_a_viewer_on_another_process_live(
    two_daphnes, own_redis, conversation, alice, session_cookie, simulator
):
    simulator.config.tps = 50
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 3000
    cookie = await in_thread(session_cookie, alice)
    owner = await open_socket(two_daphnes[0], conversation, cookie)
    viewer = await open_socket(two_daphnes[1], conversation, cookie)
    await ws_send(owner)
    mine: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    await content_until(viewer, theirs, 100)

    # Redis goes away while the owner's answer streams on (the owner's socket
    # stays open), and comes back empty.
    loop = asyncio.get_running_loop()

    def while_down() -> None:
        have = len(text_of(mine, "content"))
        future = asyncio.run_coroutine_threadsafe(
            content_until(owner, mine, have + 200), loop
        )
        future.result()

    await content_until(owner, mine, 1)
    await in_thread(own_redis.restart, while_down)
    at_restart = len(text_of(mine, "content"))

    # The viewer gets the rest live: far more text while the answer still runs.
    await content_until(viewer, theirs, at_restart + 1000)
    answer = await Message.objects.aget(role="assistant", conversation=conversation)
    assert answer.status == "streaming"

    await owner.send(json.dumps({"type": "stop"}))
    await frames_to(owner, mine, "done")
    await frames_to(viewer, theirs, "message")
    await owner.close()
    await viewer.close()
    answer = await Message.objects.aget(pk=answer.pk)
    assert answer.status == "stopped"
    # In order, nothing twice, nothing missing.
    assert text_of(theirs, "content") == answer.content == text_of(mine, "content")
    assert theirs[-1]["message"]["content"] == answer.content


async def test_an_answer_whose_task_died_gets_no_heartbeat_and_is_freed(
    conversation, monkeypatch
):
    """A generation left registered with no running task (as when its start
    failed before the task existed): the conversation is let go, and the
    orphan sweep marks the answer, since no heartbeat keeps it alive."""
    monkeypatch.setattr(
        "chat.live.engine.checkpoints.ORPHAN_AFTER", timedelta(seconds=3)
    )
    turn = await database_sync_to_async(turn_rows.begin_turn)(conversation, "hello")
    assert runner.claim(conversation.pk)
    dead = asyncio.create_task(asyncio.sleep(0))
    await dead
    runner._generations[conversation.pk] = Generation(
        conversation_id=conversation.pk,
        message=turn.answer,
        model=turn.profile.tag,
        think=None,
        task=dead,
    )
    runner._ensure_checkpoints()

    async def interrupted() -> bool:
        await runner.sweep_orphans()
        answer = await Message.objects.aget(pk=turn.answer.pk)
        return answer.status == "interrupted"

    await until(lambda: not runner.is_busy(conversation.pk), "left busy")
    await until(interrupted, "kept alive by a heartbeat")


async def test_a_group_is_heard_elsewhere_only_through_another_process_channel(
    settings, test_mode
):
    """`elsewhere`: a publisher's question, read from Redis' copy of the group."""
    redis_layer(settings, test_mode)
    config = settings.CHANNEL_LAYERS["default"]["CONFIG"]
    here, there = RedisChannelLayer(**config), RedisChannelLayer(**config)
    group = conversation_group(987654)
    try:
        assert not await here.elsewhere(group)  # nobody at all
        await here.group_add(group, await here.new_channel())
        await here.group_add(group, await here.new_channel())
        assert not await here.elsewhere(group)  # this process's own sockets
        theirs = await there.new_channel()
        await there.group_add(group, theirs)
        assert await here.elsewhere(group)
        assert await there.elsewhere(group)  # seen from there: ours are elsewhere
        await there.group_discard(group, theirs)
        assert not await here.elsewhere(group)
    finally:
        await here.flush()
        await here.close_pools()
        await there.close_pools()


async def test_an_answer_nobody_elsewhere_hears_sends_nothing_through_redis(
    settings, test_mode, monkeypatch
):
    """Its text is dropped, its offsets kept: a viewer that joins elsewhere
    hears the next event at its true offset, and catches up on the gap."""
    redis_layer(settings, test_mode)
    monkeypatch.setattr(fanout, "ELSEWHERE_SECONDS", 0.01)
    config = settings.CHANNEL_LAYERS["default"]["CONFIG"]
    here, there = CountingLayer(**config), RedisChannelLayer(**config)
    group = conversation_group(987655)
    publisher = fanout.Publisher(here, "me", 987655, 42)
    pump = asyncio.create_task(publisher.run())
    try:
        await here.group_add(group, await here.new_channel())  # the owner's socket
        await until(lambda: not publisher.listened, "read the group")
        publisher.add(server_frames.delta("content", 42, "Hello"))
        await publisher.flush()
        assert here.group_sends == 0
        viewer = await there.new_channel()
        await there.group_add(group, viewer)
        await until(lambda: publisher.listened, "heard the viewer elsewhere")
        publisher.add(server_frames.delta("content", 42, " world"))
        event = await asyncio.wait_for(there.receive(viewer), 5)
        assert (event["start"], event["text"]) == (5, " world")
        assert here.group_sends == 1
    finally:
        pump.cancel()
        await here.flush()
        await here.close_pools()
        await there.close_pools()


class CountingLayer(RedisChannelLayer):
    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.group_sends = 0

    async def group_send(self, group: str, message: dict) -> None:
        self.group_sends += 1
        await super().group_send(group, message)


async def test_a_cancelled_read_ends_wherever_the_cancellation_lands(
    settings, test_mode
):
    """A socket that ends cancels its channel read. Cancelled at each step of
    its start (the pool's connection, its handshake, the clean-up script, the
    pop), the read ends: on Python 3.11 redis-py's `wait_for` around a send
    could swallow the cancellation, and the read then popped forever (the
    consumer with it, and the suite hung in tests/sockets/auth/test_origins.py)."""
    redis_layer(settings, test_mode)
    config = settings.CHANNEL_LAYERS["default"]["CONFIG"]
    layer = RedisChannelLayer(**config)
    try:
        for steps in range(60):
            read = asyncio.ensure_future(layer.receive(await layer.new_channel()))
            for _ in range(steps):
                await asyncio.sleep(0)
            read.cancel()
            done, _ = await asyncio.wait([read], timeout=10)
            assert done, f"a read cancelled after {steps} steps kept reading"
            assert read.cancelled()
            await layer.close_pools()  # the next read connects afresh
    finally:
        await layer.flush()
        await layer.close_pools()
