"""Shared links and teams: tokens, snapshot points, expiry, copies."""

from __future__ import annotations

import math
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from chat.models import Conversation, Message, ShareLink, Team, turn_rows
from chat.models.sharing import token_digest
from chat.models.teams import copy_conversation, team_conversations

pytestmark = pytest.mark.django_db


def make_turn(conversation, question: str, answer: str, **extra) -> Message:
    conversation.messages.create(role="user", content=question)
    return conversation.messages.create(role="assistant", content=answer, **extra)


def test_tokens_carry_at_least_128_bits_and_are_unique(conversation):
    tokens = [ShareLink.create_for(conversation)[1] for _ in range(50)]
    assert len(set(tokens)) == 50
    for token in tokens:
        # URL-safe base64: 6 bits per character.
        assert len(token) * 6 >= 128
        assert set(token) <= set(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        )
    # The characters are spread like random ones (an all-"A" token would not be).
    counts = Counter("".join(tokens))
    entropy = -sum(
        n / sum(counts.values()) * math.log2(n / sum(counts.values()))
        for n in counts.values()
    )
    assert entropy > 5.8  # of at most 6 bits per character


def test_only_the_token_digest_is_stored(conversation):
    link, token = ShareLink.create_for(conversation)
    link.refresh_from_db()
    stored = [str(getattr(link, f.attname)) for f in ShareLink._meta.concrete_fields]
    assert not any(token in value for value in stored)
    assert link.token_digest == token_digest(token)
    assert ShareLink.objects.by_token(token).get() == link
    assert link.matches(token) and not link.matches(token + "x")
    assert not ShareLink.objects.by_token(token[:-1]).exists()


def test_snapshot_ends_at_the_last_finished_message_until_updated(conversation):
    make_turn(conversation, "First?", "One.")
    conversation.messages.create(role="user", content="Second?")
    conversation.messages.create(
        role="assistant", content="Tw", status=Message.Status.STREAMING
    )
    link, _ = ShareLink.create_for(conversation)
    assert [m.content for m in link.visible_messages()] == ["First?", "One.", "Second?"]

    conversation.messages.filter(status="streaming").update(
        status="done", content="Two."
    )
    make_turn(conversation, "Third?", "Three.")
    # Still the old point: the snapshot does not follow the conversation.
    assert len(link.visible_messages()) == 3
    link.update_snapshot()
    assert [m.content for m in link.visible_messages()][-2:] == ["Third?", "Three."]


def test_a_snapshot_of_an_empty_conversation_shows_nothing(conversation):
    link, _ = ShareLink.create_for(conversation)
    assert link.snapshot_upto is None and not link.visible_messages().exists()


def test_a_live_link_shows_everything_including_the_answer_being_written(
    conversation,
):
    make_turn(conversation, "Hi", "", status=Message.Status.STREAMING)
    link, _ = ShareLink.create_for(conversation, mode=ShareLink.Mode.LIVE)
    assert [m.status for m in link.visible_messages()] == ["done", "streaming"]


def test_expiry_and_revocation_decide_the_status(conversation):
    now = timezone.now()
    link, _ = ShareLink.create_for(conversation, expires_at=now + timedelta(days=1))
    assert link.status == "active" and link.is_active
    assert 0 < link.seconds_left() <= 86400
    assert link.status_at(now + timedelta(days=1, seconds=1)) == "expired"
    never, _ = ShareLink.create_for(conversation)
    assert never.seconds_left() is None
    assert never.status_at(now + timedelta(days=3650)) == "active"
    link.revoke()
    first = link.revoked_at
    link.revoke()  # twice: the first moment stays
    link.refresh_from_db()
    assert link.status == "revoked" and link.revoked_at == first


def test_team_conversations_are_others_shared_with_my_team(alice, bob, demo_profile):
    team = Team.objects.create(name="Research")
    team.members.add(alice, bob)
    shared = Conversation.objects.create(owner=alice, title="Shared")
    Conversation.objects.create(owner=alice, title="Private")
    team.conversations.add(shared)
    assert list(team_conversations(bob)) == [shared]
    assert list(team_conversations(alice)) == []  # one's own are not "shared"

    other = Team.objects.create(name="Other")
    other.members.add(alice)
    other.conversations.add(Conversation.objects.create(owner=alice, title="Other"))
    assert list(team_conversations(bob)) == [shared]

    team.members.remove(alice)  # the owner left: the team no longer sees it
    assert list(team_conversations(bob)) == []


def test_a_copy_keeps_answer_text_and_thinking_only_when_shown(
    alice, bob, conversation
):
    make_turn(conversation, "Why?", "Because.", thinking="Hmm.", model_tag="m:1")
    conversation.messages.create(
        role="assistant", content="Partial", status=Message.Status.STREAMING
    )
    copy = copy_conversation(conversation, bob, include_thinking=False)
    assert copy.owner == bob and copy.pk != conversation.pk
    assert [(m.role, m.content, m.thinking) for m in copy.messages.all()] == [
        ("user", "Why?", ""),
        ("assistant", "Because.", ""),
    ]
    assert copy.model_profile == conversation.model_profile
    assert copy.history_for_prompt()[-1] == {"role": "assistant", "content": "Because."}
    with_thinking = copy_conversation(conversation, bob, include_thinking=True)
    assert with_thinking.messages.last().thinking == "Hmm."
    assert conversation.messages.count() == 3  # the source is untouched


def test_a_copy_is_the_shown_branch_and_can_branch_itself(alice, bob, conversation):
    make_turn(conversation, "One?", "First.")
    make_turn(conversation, "Two?", "Second.")
    question = conversation.messages.get(content="Two?")
    turn_rows.begin_edit(conversation, question.pk, "Two, reworded?")
    conversation.messages.filter(status=Message.Status.STREAMING).update(
        status=Message.Status.DONE, content="Second, again."
    )
    copy = copy_conversation(conversation, bob, include_thinking=False)
    rows = list(copy.messages.order_by("pk"))
    assert [m.content for m in rows] == [
        "One?",
        "First.",
        "Two, reworded?",
        "Second, again.",
    ]
    assert [m.parent_id for m in rows] == [None, *(m.pk for m in rows[:-1])]
    # The copy's own versions work as any conversation's.
    turn_rows.begin_edit(copy, rows[2].pk, "Two, copied?")
    copy.messages.filter(status=Message.Status.STREAMING).update(status="done")
    switch = turn_rows.show_version(copy, rows[2].pk)
    assert [m.content for m in switch.shown] == ["Two, reworded?", "Second, again."]
    assert switch.shown[1].versions.count == 2
