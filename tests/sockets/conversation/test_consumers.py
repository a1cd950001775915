from __future__ import annotations

import asyncio
import json
import threading

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from django.urls import reverse

from chat.models import Conversation, Message, ModelProfile
from chatsite.asgi import application
from tests.support.communicators import (
    ORIGIN,
    WebsocketCommunicator,
    answer_of,
    connect,
    frames_until,
    send,
    text_of,
)
from tests.support.waiting import DEADLINE, idle, settled

pytestmark = pytest.mark.django_db(transaction=True)


async def test_connect_closes_anonymous_socket_with_4401(conversation):
    from django.contrib.auth.models import AnonymousUser

    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.pk}/", headers=[ORIGIN]
    )
    communicator.scope["user"] = AnonymousUser()
    await communicator.connect()
    assert await communicator.receive_output(timeout=5) == {
        "type": "websocket.close",
        "code": 4401,
    }
    await communicator.disconnect()


async def test_connect_closes_someone_elses_conversation_with_4403(bob, conversation):
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.pk}/", headers=[ORIGIN]
    )
    communicator.scope["user"] = bob
    await communicator.connect()
    output = await communicator.receive_output(timeout=5)
    assert output == {"type": "websocket.close", "code": 4403}
    await communicator.disconnect()


async def test_a_frame_is_handled_while_the_database_thread_is_busy(
    alice, conversation
):
    """No frame waits for the database thread unless it needs the database
    (`LiveSocket.dispatch`): a bad frame is answered while that thread is held
    (a hop there before each frame, channels' own dispatch, waited for it)."""
    communicator = await connect(alice, conversation)
    held = threading.Event()
    # Thread-sensitive, as `database_sync_to_async`: the same one thread.
    busy = asyncio.ensure_future(sync_to_async(held.wait)())
    try:
        await communicator.send_to(text_data="not json")
        frame = await communicator.receive_json_from(timeout=DEADLINE)
        assert frame["code"] == "bad_frame"
        assert not busy.done()
    finally:
        held.set()
        await busy
    # The socket's database work still runs (in that thread, once free).
    await send(communicator)
    assert (await frames_until(communicator, "done"))[-1]["type"] == "done"
    await communicator.disconnect()


async def test_cross_origin_socket_is_refused(alice, conversation):
    communicator = WebsocketCommunicator(
        application,
        f"/ws/conversations/{conversation.pk}/",
        headers=[(b"origin", b"http://evil.example")],
    )
    communicator.scope["user"] = alice
    connected, _ = await communicator.connect()
    assert not connected
    await communicator.disconnect()


async def test_send_streams_thinking_then_answer_and_stores_both(
    alice, conversation, simulator
):
    communicator = await connect(alice, conversation)
    await send(communicator, "Explain streams")
    frames = await frames_until(communicator, "done")
    final = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()

    kinds = [f["type"] for f in frames]
    assert kinds[0] == "message" and frames[0]["message"]["role"] == "user"
    assert frames[0]["message"]["content"] == "Explain streams"
    assert kinds[1:3] == ["conversation", "start"] and frames[2]["thinking"] is True
    assert kinds.index("thinking") < kinds.index("content")
    assert frames[-1]["status"] == "done"

    answer = await answer_of(conversation)
    assert answer.status == Message.Status.DONE
    assert answer.content == text_of(frames, "content") and answer.content
    assert answer.thinking == text_of(frames, "thinking") and answer.thinking
    assert answer.output_tokens and answer.eval_ms and answer.first_token_ms is not None
    assert answer.model_tag == "qwen3-demo:8b" and answer.thinking_enabled is True
    assert final["type"] == "message" and final["message"]["id"] == answer.pk
    assert "<p>" in final["message"]["html"]

    request = simulator.log[-1].body
    assert request["think"] is True
    assert request["messages"] == [{"role": "user", "content": "Explain streams"}]
    assert request["options"]["num_ctx"] == 8192


async def test_thinking_off_asks_the_model_not_to_think(alice, conversation, simulator):
    conversation.thinking = "off"
    await conversation.asave()
    communicator = await connect(alice, conversation)
    await send(communicator)
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()

    assert simulator.log[-1].body["think"] is False
    assert not text_of(frames, "thinking")
    assert text_of(frames, "content")


async def test_model_without_thinking_is_not_sent_think(alice, conversation, simulator):
    plain = await ModelProfile.objects.acreate(
        tag="llama-demo:3b", base_url=simulator.url, supports_thinking=False
    )
    conversation.model_profile = plain
    conversation.thinking = "on"
    await conversation.asave()
    communicator = await connect(alice, conversation)
    await send(communicator)
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()

    assert "think" not in simulator.log[-1].body
    assert frames[-1]["status"] == "done"


async def test_history_never_sends_earlier_thinking(alice, conversation, simulator):
    communicator = await connect(alice, conversation)
    await send(communicator, "first")
    await frames_until(communicator, "done")
    await send(communicator, "second")
    await frames_until(communicator, "done")
    await communicator.disconnect()

    first_answer = await conversation.messages.filter(role="assistant").afirst()
    sent = simulator.log[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1] == {"role": "assistant", "content": first_answer.content}
    assert all("thinking" not in m for m in sent)


async def test_stop_closes_upstream_and_keeps_the_partial_answer(
    alice, conversation, simulator
):
    simulator.config.tps = 40
    simulator.config.answer_tokens = 400
    communicator = await connect(alice, conversation)
    await send(communicator)
    frames = await frames_until(communicator, "content")
    await communicator.send_json_to({"type": "stop"})
    frames += await frames_until(communicator, "done")
    await communicator.disconnect()

    assert frames[-1]["status"] == "stopped"
    answer = await answer_of(conversation)
    assert answer.status == Message.Status.STOPPED
    assert answer.content == text_of(frames, "content")
    entry = await simulator.wait_for_end()
    assert entry.disconnected and not entry.finished


async def test_closing_the_socket_does_not_stop_the_answer(
    alice, conversation, simulator
):
    simulator.config.tps = 200
    simulator.config.answer_tokens = 60
    communicator = await connect(alice, conversation)
    await send(communicator)
    await frames_until(communicator, "content")
    await communicator.disconnect()

    answer = await settled((await answer_of(conversation)).pk)
    assert answer.status == Message.Status.DONE
    entry = await simulator.wait_for_end()
    assert entry.finished and not entry.disconnected
    assert answer.output_tokens == entry.tokens_sent


async def test_resume_sends_exactly_the_missing_text(alice, conversation, simulator):
    simulator.config.tps = 100
    simulator.config.answer_tokens = 120
    owner = await connect(alice, conversation)
    await send(owner)
    owner_frames = await frames_until(owner, "content")
    message_id = owner_frames[-1]["message_id"]

    # A reloaded tab that rendered the first 3 characters of the answer.
    have = text_of(owner_frames, "content")[:3]
    reader = await connect(alice, conversation)
    await reader.send_json_to(
        {
            "type": "resume",
            "message_id": message_id,
            "offset": len(have),
            "thinking_offset": 0,
        }
    )
    reader_frames = await frames_until(reader, "done")
    await frames_until(owner, "done")
    await owner.disconnect()
    await reader.disconnect()

    answer = await Message.objects.aget(pk=message_id)
    assert reader_frames[0]["type"] == "start"
    assert have + text_of(reader_frames, "content") == answer.content
    assert text_of(reader_frames, "thinking") == answer.thinking


async def test_resume_of_a_finished_answer_sends_the_stored_message(
    alice, conversation
):
    answer = await conversation.messages.acreate(
        role="assistant", content="All done.", status="done"
    )
    communicator = await connect(alice, conversation)
    await communicator.send_json_to(
        {"type": "resume", "message_id": answer.pk, "offset": 2}
    )
    frame = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    assert frame["type"] == "message"
    assert frame["message"]["content"] == "All done."


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("not json", "bad_frame"),
        ("[1, 2]", "bad_frame"),
        ('{"type": "dance"}', "unknown_type"),
        ('{"type": "send", "content": "   "}', "empty_message"),
        ('{"type": "send", "content": 5}', "empty_message"),
        ('{"type": "resume", "message_id": -1, "offset": 0}', "bad_frame"),
    ],
)
async def test_bad_frames_get_an_error_and_keep_the_socket(
    alice, conversation, raw, code
):
    communicator = await connect(alice, conversation)
    await communicator.send_to(text_data=raw)
    frame = await communicator.receive_json_from(timeout=5)
    assert frame == {
        "type": "error",
        "message_id": None,
        "code": code,
        "detail": frame["detail"],
    }
    assert frame["detail"]
    # Still open and usable.
    await communicator.send_to(text_data='{"type": "stop"}')
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()
    assert await conversation.messages.acount() == 0


async def test_too_long_message_is_refused_and_nothing_stored(
    alice, conversation, settings
):
    settings.MESSAGE_MAX_CHARS = 50
    communicator = await connect(alice, conversation)
    await send(communicator, "x" * 51)
    frame = await communicator.receive_json_from(timeout=5)
    await communicator.send_to(text_data=json.dumps({"type": "x", "pad": "y" * 9000}))
    oversized = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    assert frame["code"] == "message_too_long"
    assert oversized["code"] == "frame_too_large"
    assert await conversation.messages.acount() == 0


async def test_second_send_while_answering_is_refused(alice, conversation, simulator):
    simulator.config.tps = 50
    communicator = await connect(alice, conversation)
    await send(communicator, "one")
    await frames_until(communicator, "start")
    await send(communicator, "two")
    frames = await frames_until(communicator, "error")
    await communicator.send_json_to({"type": "stop"})
    await frames_until(communicator, "done")
    await communicator.disconnect()
    assert frames[-1]["code"] == "busy"
    assert await conversation.messages.filter(role="user").acount() == 1


async def test_no_model_set_up_is_a_clear_error(alice, db_conversation_without_model):
    conversation = db_conversation_without_model
    communicator = await connect(alice, conversation)
    await send(communicator)
    frame = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    assert frame["code"] == "no_model"
    assert "admin" in frame["detail"]


@pytest.mark.parametrize(
    ("setup", "code"),
    [
        ({"tag": "missing:1b"}, "model_not_found"),
        ({"base_url": "http://127.0.0.1:9"}, "upstream_unreachable"),
        ({"status": 503}, "upstream_busy"),
        ({"status": 500}, "upstream_error"),
    ],
)
async def test_model_server_failures_are_reported_and_the_question_kept(
    alice, conversation, simulator, setup, code
):
    profile = conversation.model_profile
    if "tag" in setup:
        profile.tag = setup["tag"]
    if "base_url" in setup:
        profile.base_url = setup["base_url"]
    await profile.asave()
    if "status" in setup:
        simulator.config.status = setup["status"]
    communicator = await connect(alice, conversation)
    await send(communicator, "still here?")
    frames = await frames_until(communicator, "done")
    final = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()

    error = next(f for f in frames if f["type"] == "error")
    assert error["code"] == code and error["detail"]
    assert frames[-1]["status"] == "error"
    assert final["message"]["error_code"] == code
    assert await conversation.messages.filter(
        role="user", content="still here?"
    ).aexists()
    answer = await answer_of(conversation)
    assert answer.status == Message.Status.ERROR and answer.error_detail


@pytest.mark.parametrize(
    ("fault", "code"), [("cut_after", "stream_cut"), ("error_after", "upstream_error")]
)
async def test_failure_mid_answer_keeps_the_partial_text(
    alice, conversation, simulator, fault, code
):
    simulator.config.think_tokens = 0
    setattr(simulator.config, fault, 8)
    communicator = await connect(alice, conversation)
    await send(communicator)
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()

    assert next(f for f in frames if f["type"] == "error")["code"] == code
    answer = await answer_of(conversation)
    assert answer.status == Message.Status.ERROR
    assert answer.content == text_of(frames, "content") and answer.content


async def test_another_tab_sees_the_same_stream(alice, conversation, simulator):
    first = await connect(alice, conversation)
    second = await connect(alice, conversation)
    await send(first)
    one = await frames_until(first, "done")
    two = await frames_until(second, "done")
    await first.disconnect()
    await second.disconnect()
    assert text_of(one, "content") == text_of(two, "content")
    assert two[0]["type"] == "message" and two[0]["message"]["role"] == "user"


async def test_new_conversation_takes_its_title_from_the_first_message(
    alice, conversation, simulator
):
    communicator = await connect(alice, conversation)
    await send(communicator, "How do   websockets\nwork?")
    frames = await frames_until(communicator, "done")
    await send(communicator, "And then?")
    later = await frames_until(communicator, "done")
    await communicator.disconnect()
    await conversation.arefresh_from_db()
    assert conversation.title == "How do websockets work?"
    renamed = [f for f in frames if f["type"] == "conversation"]
    assert renamed == [
        {"type": "conversation", "id": conversation.pk, "title": conversation.title}
    ]
    assert not [f for f in later if f["type"] == "conversation"]


def test_conversation_fixture_uses_the_simulator(conversation, simulator):
    assert Conversation.objects.get(pk=conversation.pk).model_profile.base_url == (
        simulator.url
    )


async def test_an_idle_socket_outlives_the_channel_layers_blocking_read(
    alice, conversation, simulator
):
    """channels-redis blocks 5 s per read; the socket must survive several."""
    communicator = await connect(alice, conversation)
    assert await communicator.receive_nothing(timeout=6.5)
    await send(communicator)
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()
    assert frames[-1]["status"] == "done"


async def test_deleting_the_conversation_mid_answer_frees_the_runner(
    alice, conversation, simulator, caplog
):
    import logging

    logging.getLogger("chat").addHandler(caplog.handler)  # "chat" does not propagate

    simulator.config.tps = 100
    simulator.config.answer_tokens = 60
    communicator = await connect(alice, conversation)
    await send(communicator)
    await frames_until(communicator, "content")
    await Conversation.objects.filter(pk=conversation.pk).adelete()
    await simulator.wait_for_end()
    await idle(conversation.pk)
    await communicator.disconnect()
    logging.getLogger("chat").removeHandler(caplog.handler)
    assert not await Message.objects.filter(conversation_id=conversation.pk).aexists()
    assert "could not be saved" in caplog.text


async def answered_once(communicator, content: str = "first question") -> list[dict]:
    """The frames of one whole answer, up to the stored final message."""
    await send(communicator, content)
    frames = await frames_until(communicator, "done")
    return [*frames, await communicator.receive_json_from(timeout=5)]


async def answered_in_two_tabs(user, conversation):
    """Two tabs of the conversation, after one answer both saw to its end."""
    owner = await connect(user, conversation)
    other = await connect(user, conversation)
    before = await answered_once(owner)
    await frames_until(other, "done")
    await other.receive_json_from(timeout=5)
    return owner, other, before


async def test_regenerate_replaces_the_answer_in_every_tab(
    alice, conversation, simulator
):
    owner, other, before = await answered_in_two_tabs(alice, conversation)
    old_question, old_answer = before[0]["message"]["id"], before[2]["message_id"]

    simulator.config.seed = 7  # a different answer this time
    await owner.send_json_to({"type": "regenerate"})
    frames = await frames_until(owner, "done")
    seen = await frames_until(other, "done")
    await owner.disconnect()
    await other.disconnect()

    for tab in (frames, seen):
        assert tab[0] == {"type": "removed", "message_ids": [old_question, old_answer]}
        assert [f["type"] for f in tab[1:3]] == ["message", "start"]
        assert tab[1]["message"]["content"] == "first question"
    answer = await answer_of(conversation)
    assert answer.pk == frames[2]["message_id"] != old_answer
    assert answer.content == text_of(frames, "content") == text_of(seen, "content")
    assert await conversation.messages.acount() == 2
    sent = simulator.log[-1].body["messages"]
    assert sent == [{"role": "user", "content": "first question"}]


async def test_edit_resends_the_changed_question(alice, conversation, simulator):
    communicator = await connect(alice, conversation)
    await answered_once(communicator, "first question")
    before = await answered_once(communicator, "second qestion")
    question_id = before[0]["message"]["id"]

    await communicator.send_json_to(
        {"type": "edit", "message_id": question_id, "content": "second question"}
    )
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()

    assert frames[0] == {
        "type": "removed",
        "message_ids": [question_id, before[1]["message_id"]],
    }
    assert frames[1]["message"]["content"] == "second question"
    sent = simulator.log[-1].body["messages"]
    assert [m["content"] for m in sent][::2] == ["first question", "second question"]
    assert "second qestion" not in str(sent)
    contents = [m.content async for m in conversation.messages.filter(role="user")]
    assert contents == ["first question", "second question"]


async def test_a_regenerated_answer_and_a_version_switch_reach_every_tab(
    alice, conversation, simulator
):
    owner, other, before = await answered_in_two_tabs(alice, conversation)
    first = [before[0]["message"]["id"], before[2]["message_id"]]

    await owner.send_json_to({"type": "regenerate"})
    await frames_until(owner, "done")
    final = await owner.receive_json_from(timeout=5)
    await frames_until(other, "done")
    await other.receive_json_from(timeout=5)
    assert '<span class="version-number">2 / 2</span>' in final["message"]["html"]
    second = [final["message"]["id"] - 1, final["message"]["id"]]

    client = AsyncClient()
    await client.aforce_login(alice)
    url = reverse("show_version", args=[conversation.pk, first[0]])
    response = await client.post(url)
    assert response.status_code == 200
    for tab in (owner, other):
        removed, question, answer = [await tab.receive_json_from(5) for _ in "qa."]
        assert removed == {"type": "removed", "message_ids": second}
        assert [question["message"]["id"], answer["message"]["id"]] == first
        assert "1 / 2</span>" in answer["message"]["html"]
    assert response.json()["frames"][0] == removed

    # A tab that reconnects after the answer finished is sent it with its versions.
    await other.send_json_to({"type": "resume", "message_id": first[1], "offset": 0})
    resumed = await other.receive_json_from(timeout=5)
    assert "1 / 2</span>" in resumed["message"]["html"]
    await owner.disconnect()
    await other.disconnect()


async def refused(communicator, frame: dict) -> dict:
    await communicator.send_json_to(frame)
    return await frames_until(communicator, "error", timeout=5)


async def test_regenerate_with_nothing_to_regenerate_is_a_clear_error(
    alice, conversation, simulator
):
    communicator = await connect(alice, conversation)
    frames = await refused(communicator, {"type": "regenerate"})
    await communicator.disconnect()
    assert [f["type"] for f in frames] == ["error"]
    assert frames[0]["code"] == "nothing_to_regenerate"
    assert frames[0]["message_id"] is None and frames[0]["detail"]
    assert not simulator.log


async def test_regenerate_and_edit_are_refused_while_an_answer_streams(
    alice, conversation, simulator
):
    simulator.config.tps = 50
    communicator = await connect(alice, conversation)
    await send(communicator, "one")
    started = await frames_until(communicator, "start")
    question_id = started[0]["message"]["id"]
    regenerate = await refused(communicator, {"type": "regenerate"})
    edit = await refused(
        communicator, {"type": "edit", "message_id": question_id, "content": "x"}
    )
    await communicator.send_json_to({"type": "stop"})
    await frames_until(communicator, "done")
    await communicator.disconnect()
    assert regenerate[-1]["code"] == edit[-1]["code"] == "busy"
    assert not [f for f in regenerate + edit if f["type"] == "removed"]
    assert await Message.objects.filter(pk=question_id, content="one").aexists()
    assert len(simulator.log) == 1


async def test_editing_what_is_not_a_shown_question_is_refused(
    alice, bob, conversation, simulator
):
    communicator = await connect(alice, conversation)
    first = await answered_once(communicator, "first question")
    await answered_once(communicator, "second question")
    elsewhere = await Conversation.objects.acreate(owner=bob)
    theirs = await elsewhere.messages.acreate(role="user", content="bob's")
    codes = []
    for message_id in (first[2]["message_id"], theirs.pk, 10**12):
        frames = await refused(
            communicator, {"type": "edit", "message_id": message_id, "content": "x"}
        )
        codes.append((frames[-1]["code"], len(frames)))
    for message_id in (first[0]["message"]["id"], theirs.pk):
        frames = await refused(
            communicator, {"type": "regenerate", "message_id": message_id}
        )
        codes.append((frames[-1]["code"], len(frames)))
    await communicator.disconnect()
    assert codes == [("not_a_question", 1)] * 3 + [("nothing_to_regenerate", 1)] * 2
    assert await conversation.messages.acount() == 4
    assert await Message.objects.filter(pk=theirs.pk, content="bob's").aexists()
    assert len(simulator.log) == 2


async def test_editing_the_first_of_two_questions_starts_a_branch(
    alice, conversation, simulator
):
    communicator = await connect(alice, conversation)
    first = await answered_once(communicator, "first question")
    second = await answered_once(communicator, "second question")
    await communicator.send_json_to(
        {"type": "edit", "message_id": first[0]["message"]["id"], "content": "reworded"}
    )
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()
    old = [
        first[0]["message"]["id"],
        first[2]["message_id"],
        second[0]["message"]["id"],
        second[2]["message_id"],
    ]
    assert frames[0] == {"type": "removed", "message_ids": old}
    assert frames[1]["message"]["content"] == "reworded"
    request = (await simulator.wait_for_end()).body
    assert request["messages"] == [{"role": "user", "content": "reworded"}]
    assert await Message.objects.filter(pk__in=old, replaced=True).acount() == 4


async def test_regenerating_the_first_of_two_answers_starts_a_branch(
    alice, conversation, simulator
):
    communicator = await connect(alice, conversation)
    first = await answered_once(communicator, "first question")
    await answered_once(communicator, "second question")
    await communicator.send_json_to(
        {"type": "regenerate", "message_id": first[2]["message_id"]}
    )
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()
    assert len(frames[0]["message_ids"]) == 4
    assert frames[1]["message"]["content"] == "first question"
    request = (await simulator.wait_for_end()).body
    assert request["messages"] == [{"role": "user", "content": "first question"}]


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"content": "  \n"}, "empty_message"),
        ({"content": 5}, "empty_message"),
        ({"content": "x" * 51}, "message_too_long"),
        ({"message_id": "7"}, "bad_frame"),
        ({"message_id": None}, "bad_frame"),
    ],
)
async def test_bad_edits_are_refused_and_change_nothing(
    alice, conversation, simulator, settings, change, code
):
    settings.MESSAGE_MAX_CHARS = 50
    communicator = await connect(alice, conversation)
    before = await answered_once(communicator, "question")
    edit = {"type": "edit", "message_id": before[0]["message"]["id"], "content": "x"}
    error = await refused(communicator, {**edit, **change})
    await communicator.disconnect()
    assert error == [
        {
            "type": "error",
            "message_id": None,
            "code": code,
            "detail": error[0]["detail"],
        }
    ]
    assert error[0]["detail"]
    assert await conversation.messages.filter(content="question").aexists()
    assert await conversation.messages.acount() == 2


async def test_a_failed_regenerate_keeps_the_question_and_can_be_retried(
    alice, conversation, simulator
):
    communicator = await connect(alice, conversation)
    await answered_once(communicator, "question")
    simulator.config.status = 503
    await communicator.send_json_to({"type": "regenerate"})
    failed = await frames_until(communicator, "done")
    await communicator.receive_json_from(timeout=5)
    simulator.config.status = None
    await communicator.send_json_to({"type": "regenerate"})
    retried = await frames_until(communicator, "done")
    await communicator.disconnect()

    assert next(f for f in failed if f["type"] == "error")["code"] == "upstream_busy"
    assert failed[-1]["status"] == "error" and retried[-1]["status"] == "done"
    assert retried[0]["message_ids"] == [
        failed[1]["message"]["id"],
        failed[-1]["message_id"],
    ]
    stored = [(m.role, m.content, m.status) async for m in conversation.messages.all()]
    assert stored == [
        ("user", "question", "done"),
        ("assistant", text_of(retried, "content"), "done"),
    ]
