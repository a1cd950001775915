"""The live shared link's socket, ws/share/<token>/: read-only, no ids, closed
when the link is revoked or expires."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.test import AsyncClient
from django.urls import reverse
from django.utils import timezone

from chat.live.engine.processes.fanout import COALESCE_SECONDS
from chat.live.protocol.channel_events import conversation_group
from chat.models import Conversation, Message, ShareLink, SiteDefaults
from chat.sockets.close_codes import CLOSE_GONE, CLOSE_NOT_FOUND, CLOSE_SIGNED_OUT
from tests.support.communicators import (
    WebsocketCommunicator,
    connect,
    frames_until,
    open_viewer,
    send,
    text_of,
)

pytestmark = pytest.mark.django_db(transaction=True)


async def make_link(conversation, **kwargs) -> tuple[ShareLink, str]:
    kwargs.setdefault("mode", ShareLink.Mode.LIVE)
    return await database_sync_to_async(ShareLink.create_for)(conversation, **kwargs)


async def ready(viewer: WebsocketCommunicator) -> WebsocketCommunicator:
    """Once this answers, the socket's connect (its subscriptions) is done."""
    await viewer.send_json_to({"type": "stop"})
    assert (await viewer.receive_json_from(timeout=5))["code"] == "read_only"
    return viewer


async def closed_with(viewer: WebsocketCommunicator, timeout: float = 10) -> int:
    """The close code, after any frames sent before it."""
    while True:
        output = await viewer.receive_output(timeout=timeout)
        if output["type"] == "websocket.close":
            return output["code"]


def ids_in(frames: list[dict]) -> set[int]:
    found = set()
    for frame in frames:
        if frame.get("message_id") is not None:
            found.add(frame["message_id"])
        if frame["type"] == "message":
            found.add(frame["message"]["id"])
    return found


async def test_a_live_link_streams_the_answer_to_a_signed_out_socket(
    alice, demo_profile, simulator
):
    # Other rows first, so that ids and ordinals differ.
    for _ in range(3):
        elsewhere = await Conversation.objects.acreate(owner=alice)
        await elsewhere.messages.acreate(role="user", content="elsewhere")
    conversation = await Conversation.objects.acreate(
        owner=alice, model_profile=demo_profile
    )
    _, token = await make_link(conversation)
    viewer = await ready(await open_viewer(token))
    owner = await connect(alice, conversation)
    await send(owner, "Explain streams")
    await frames_until(owner, "done")
    seen = await frames_until(viewer, "done")
    final = await viewer.receive_json_from(timeout=5)
    await owner.disconnect()
    await viewer.disconnect()

    answer = await conversation.messages.filter(role="assistant").alast()
    assert [f["type"] for f in seen][:3] == ["message", "conversation", "start"]
    assert seen[0]["message"]["content"] == "Explain streams"
    assert seen[1] == {"type": "conversation", "title": "Explain streams"}
    assert text_of(seen, "content") == answer.content and answer.content
    # Thinking is not part of this link: no thinking frame, no stored thinking.
    assert answer.thinking and not text_of(seen, "thinking")
    assert seen[2]["thinking"] is None
    assert final["type"] == "message" and final["message"]["thinking"] == ""
    assert answer.thinking not in final["message"]["html"]
    # Ordinals, never database ids; no client id.
    assert ids_in([*seen, final]) == {1, 2}
    assert final["message"]["dom_id"] == "message-2"
    assert seen[0]["message"]["client_id"] == ""
    raw = json.dumps([*seen, final])
    assert answer.pk > 2 and conversation.pk > 2
    assert f"message-{answer.pk}" not in raw
    assert f'"id": {conversation.pk}' not in raw and f"/c/{conversation.pk}/" not in raw


async def test_a_link_with_thinking_streams_the_thinking_too(
    alice, conversation, simulator
):
    _, token = await make_link(conversation, include_thinking=True)
    viewer = await ready(await open_viewer(token))
    owner = await connect(alice, conversation)
    await send(owner)
    seen = await frames_until(viewer, "done")
    final = await viewer.receive_json_from(timeout=5)
    await owner.disconnect()
    await viewer.disconnect()

    answer = await conversation.messages.filter(role="assistant").alast()
    assert text_of(seen, "thinking") == answer.thinking and answer.thinking
    assert final["message"]["thinking"] == answer.thinking


async def test_a_viewer_gets_the_text_merged_while_the_owner_gets_each_token(
    alice, conversation, simulator
):
    simulator.config.tps = 1000
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 300
    _, token = await make_link(conversation)
    viewer = await ready(await open_viewer(token))
    owner = await connect(alice, conversation)
    await send(owner)
    mine = await frames_until(owner, "done")
    seen = await frames_until(viewer, "done")
    await owner.disconnect()
    await viewer.disconnect()

    answer = await conversation.messages.filter(role="assistant").alast()
    assert text_of(seen, "content") == text_of(mine, "content") == answer.content
    # At most one viewer frame per ~50 ms of the answer (about 300 ms here),
    # where the owner got about one per token.
    viewer_frames = sum(f["type"] == "content" for f in seen)
    assert answer.total_ms is not None
    assert viewer_frames <= answer.total_ms / 1000 / COALESCE_SECONDS + 2


async def test_a_viewer_joining_mid_answer_resumes_by_ordinal(
    alice, conversation, simulator
):
    simulator.config.tps = 100
    simulator.config.answer_tokens = 80
    _, token = await make_link(conversation)
    owner = await connect(alice, conversation)
    await send(owner)
    await frames_until(owner, "content")
    viewer = await open_viewer(token)
    await viewer.send_json_to({"type": "resume", "message_id": 2, "offset": 0})
    seen = await frames_until(viewer, "done")
    await frames_until(owner, "done")
    await owner.disconnect()
    await viewer.disconnect()

    answer = await conversation.messages.filter(role="assistant").alast()
    assert seen[0] == {
        "type": "start",
        "message_id": 2,
        "model": "qwen3-demo:8b",
        "thinking": None,
    }
    assert text_of(seen, "content") == answer.content
    assert not text_of(seen, "thinking")


async def test_a_viewer_gets_what_came_between_its_page_and_its_socket(
    alice, conversation, simulator
):
    simulator.config.tps = 100
    simulator.config.answer_tokens = 80
    await conversation.messages.acreate(role="user", content="Earlier question")
    await conversation.messages.acreate(role="assistant", content="Earlier answer")
    _, token = await make_link(conversation)
    owner = await connect(alice, conversation)
    await send(owner, "Next question")
    await frames_until(owner, "content")
    # The page showed the first two messages; the question and the running
    # answer came before its socket opened.
    viewer = await open_viewer(token, query="?seen=2")
    seen = await frames_until(viewer, "done")
    await frames_until(owner, "done")
    await owner.disconnect()
    await viewer.disconnect()

    answer = await conversation.messages.filter(role="assistant").alast()
    assert seen[0]["type"] == "message" and seen[0]["message"]["id"] == 3
    assert seen[0]["message"]["content"] == "Next question"
    assert seen[1]["type"] == "start" and seen[1]["message_id"] == 4
    assert text_of(seen, "content") == answer.content  # all of it, once
    assert "Earlier answer" not in json.dumps(seen)


async def test_a_viewer_whose_page_was_current_gets_no_catch_up(conversation):
    await conversation.messages.acreate(role="user", content="Question")
    await conversation.messages.acreate(role="assistant", content="Answer")
    _, token = await make_link(conversation)
    for query in ("?seen=2", "", "?seen=x", "?seen=99"):
        viewer = await open_viewer(token, query=query)
        assert await viewer.receive_nothing(timeout=0.3)
        await viewer.disconnect()
    viewer = await open_viewer(token, query="?seen=1")
    frame = await viewer.receive_json_from(timeout=5)
    assert frame["message"]["id"] == 2 and frame["message"]["content"] == "Answer"
    await viewer.disconnect()


async def test_a_viewer_may_only_resume(alice, conversation, simulator):
    _, token = await make_link(conversation)
    viewer = await open_viewer(token)
    refused = [
        {"type": "send", "content": "Injected", "client_id": "x"},
        {"type": "stop"},
        {"type": "regenerate"},
    ]
    for frame in refused:
        await viewer.send_json_to(frame)
        reply = await viewer.receive_json_from(timeout=5)
        assert reply["type"] == "error" and reply["message_id"] is None
        assert reply["code"] in {"read_only", "unknown_type"}
    await viewer.send_to(text_data="{not json")
    assert (await viewer.receive_json_from(timeout=5))["code"] == "bad_frame"
    await viewer.send_json_to({"type": "resume", "message_id": 99, "offset": 0})
    assert (await viewer.receive_json_from(timeout=5))["code"] == "not_found"
    # Still open, and nothing was stored or asked of the model.
    await viewer.send_json_to({"type": "stop"})
    assert (await viewer.receive_json_from(timeout=5))["code"] == "read_only"
    await viewer.disconnect()
    assert not await conversation.messages.aexists()
    assert not simulator.log


async def test_revoking_closes_the_open_sockets(alice, conversation, simulator):
    link, token = await make_link(conversation)
    viewer = await ready(await open_viewer(token))
    client = AsyncClient()
    await client.aforce_login(alice)
    response = await client.post(reverse("revoke_share_link", args=[link.pk]))
    assert response.status_code == 302
    gone = await viewer.receive_json_from(timeout=10)
    assert gone["type"] == "error" and gone["code"] == "link_gone"
    assert gone["detail"] == "This link is no longer available."
    assert await closed_with(viewer) == CLOSE_GONE
    await viewer.disconnect()
    # And it cannot come back.
    again = await open_viewer(token)
    assert await closed_with(again) == CLOSE_GONE
    await again.disconnect()


async def test_deleting_the_conversation_closes_its_links_sockets(alice, conversation):
    _, token = await make_link(conversation)
    viewer = await ready(await open_viewer(token))
    await conversation.adelete()
    assert (await viewer.receive_json_from(timeout=10))["code"] == "link_gone"
    assert await closed_with(viewer) == CLOSE_GONE
    await viewer.disconnect()


async def test_an_expired_link_is_refused_and_a_passing_expiry_cuts_off(
    conversation,
):
    _, old = await make_link(conversation, expires_at=timezone.now())
    viewer = await open_viewer(old)
    assert await closed_with(viewer) == CLOSE_GONE
    await viewer.disconnect()

    soon = timezone.now() + timedelta(seconds=1)
    _, token = await make_link(conversation, expires_at=soon)
    viewer = await open_viewer(token)
    gone = await viewer.receive_json_from(timeout=10)
    assert gone["code"] == "link_gone"
    assert await closed_with(viewer) == CLOSE_GONE
    await viewer.disconnect()


async def test_snapshot_and_unknown_links_have_no_socket(conversation):
    _, token = await make_link(conversation, mode=ShareLink.Mode.SNAPSHOT)
    for path_token in (token, token[:-2] + "zz", "x"):
        viewer = await open_viewer(path_token)
        assert await closed_with(viewer) == CLOSE_NOT_FOUND
        await viewer.disconnect()


async def test_sign_in_required_closes_signed_out_viewers_with_4401(bob, conversation):
    site = await SiteDefaults.objects.acreate(share_requires_sign_in=True)
    assert site.share_requires_sign_in
    _, token = await make_link(conversation)
    viewer = await open_viewer(token)
    assert await closed_with(viewer) == CLOSE_SIGNED_OUT
    await viewer.disconnect()
    signed_in = await open_viewer(token, user=bob)
    await signed_in.send_json_to({"type": "stop"})
    assert (await signed_in.receive_json_from(timeout=5))["code"] == "read_only"
    await signed_in.disconnect()


async def test_frames_from_other_processes_are_filtered_too(conversation):
    question = await conversation.messages.acreate(role="user", content="Hi")
    answer = await conversation.messages.acreate(
        role="assistant", status=Message.Status.STREAMING
    )
    _, token = await make_link(conversation)
    viewer = await ready(await open_viewer(token))
    layer = get_channel_layer()
    group = conversation_group(conversation.pk)
    for kind, text in (("thinking", "private"), ("content", "Hello")):
        await layer.group_send(
            group,
            {
                "type": "chat.delta",
                "origin": "another-process",
                "message_id": answer.pk,
                "kind": kind,
                "start": 0,
                "text": text,
            },
        )
    await layer.group_send(
        group,
        {
            "type": "chat.frame",
            "origin": "another-process",
            "frames": [{"type": "queued-for-owner-only", "secret": question.pk}],
        },
    )
    delta = await viewer.receive_json_from(timeout=5)
    assert delta == {"type": "content", "message_id": 2, "delta": "Hello"}
    assert await viewer.receive_nothing(timeout=0.3)
    await viewer.disconnect()


async def test_a_regenerate_or_another_version_replaces_the_answer_for_a_viewer(
    alice, conversation, simulator
):
    _, token = await make_link(conversation)
    viewer = await ready(await open_viewer(token))
    owner = await connect(alice, conversation)
    await send(owner, "First try")
    await frames_until(owner, "done")
    await frames_until(viewer, "done")
    first = await viewer.receive_json_from(timeout=5)  # the stored answer
    await owner.send_json_to({"type": "regenerate"})
    await frames_until(owner, "done")
    seen = await frames_until(viewer, "done")
    await viewer.receive_json_from(timeout=5)

    # The old question and answer (ordinals 1, 2) go; their replacements take
    # the same ordinals, as a reload of the shared page would number them.
    assert seen[0] == {"type": "removed", "message_ids": [1, 2]}
    assert seen[1]["type"] == "message" and seen[1]["message"]["id"] == 1
    assert seen[1]["message"]["content"] == "First try"
    assert ids_in(seen[1:]) == {1, 2}

    # The owner goes back to the first version: the viewer follows, with no
    # control to switch (nor the owner's ids) on the page.
    questions = Message.objects.filter(conversation=conversation, role="user")
    oldest = await questions.order_by("pk").values_list("pk", flat=True).afirst()
    client = AsyncClient()
    await client.aforce_login(alice)
    url = reverse("show_version", args=[conversation.pk, oldest])
    assert (await client.post(url)).status_code == 200
    switched = [await viewer.receive_json_from(timeout=5) for _ in range(3)]
    await owner.disconnect()
    await viewer.disconnect()
    assert switched[0] == {"type": "removed", "message_ids": [1, 2]}
    assert [f["message"]["id"] for f in switched[1:]] == [1, 2]
    answer = switched[2]["message"]
    assert answer["content"] == first["message"]["content"]
    assert "versions" not in answer["html"] and "show/" not in answer["html"]


async def test_a_viewer_follows_an_edit_of_an_earlier_turn_and_the_walk_back(
    alice, conversation, simulator
):
    """Three turns; the owner edits the first question, then shows its first
    version again: the viewer's page loses and regains the later turns, with
    the ordinals a reload would give."""
    _, token = await make_link(conversation)
    viewer = await ready(await open_viewer(token))
    owner = await connect(alice, conversation)
    for n in (1, 2, 3):
        simulator.config.answer_text = f"answer {n}"
        await send(owner, f"question {n}")
        await frames_until(owner, "done")
        await frames_until(viewer, "done")
        await viewer.receive_json_from(timeout=5)  # the stored answer
    first = await Message.objects.filter(content="question 1").afirst()
    simulator.config.answer_text = "answer 1b"
    await owner.send_json_to(
        {"type": "edit", "message_id": first.pk, "content": "question 1b"}
    )
    await frames_until(owner, "done")
    edited = await frames_until(viewer, "done")
    await viewer.receive_json_from(timeout=5)
    assert edited[0] == {"type": "removed", "message_ids": [1, 2, 3, 4, 5, 6]}
    assert edited[1]["message"]["id"] == 1
    assert edited[1]["message"]["content"] == "question 1b"
    assert ids_in(edited[1:]) == {1, 2}

    client = AsyncClient()
    await client.aforce_login(alice)
    url = reverse("show_version", args=[conversation.pk, first.pk])
    assert (await client.post(url)).status_code == 200
    back = [await viewer.receive_json_from(timeout=5) for _ in range(7)]
    await owner.disconnect()
    await viewer.disconnect()
    assert back[0] == {"type": "removed", "message_ids": [1, 2]}
    assert [f["message"]["id"] for f in back[1:]] == [1, 2, 3, 4, 5, 6]
    assert [f["message"]["content"] for f in back[1:]] == [
        "question 1", "answer 1", "question 2", "answer 2", "question 3", "answer 3",
    ]  # fmt: skip


async def test_a_flooding_viewer_is_closed_with_4429(alice, conversation, settings):
    from chat.sockets.close_codes import CLOSE_RATE_LIMITED

    settings.WS_FRAME_RATE = 1
    settings.WS_FRAME_BURST = 2
    settings.WS_FLOOD_CLOSE_AFTER = 10
    _, token = await make_link(conversation)
    viewer = await open_viewer(token)
    for _ in range(40):
        await viewer.send_to(text_data="{}")
    assert await closed_with(viewer) == CLOSE_RATE_LIMITED
