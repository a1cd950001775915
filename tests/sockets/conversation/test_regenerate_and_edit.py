"""Regenerating an answer and editing a question over the conversation socket: the
turn replaced in every tab, a version switch, branches from an earlier turn, and
what is refused (nothing to regenerate, while an answer streams, not a shown
question, a bad edit) or fails and can be retried."""

from __future__ import annotations

import pytest
from django.test import AsyncClient
from django.urls import reverse

from chat.models import Conversation, Message
from tests.support.communicators import answer_of, connect, frames_until, send, text_of

pytestmark = pytest.mark.django_db(transaction=True)


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
