"""Branches: any question edited or answer regenerated starts a new version of
its turn, the old continuation kept on its own branch; switching a turn's
version shows the branch last viewed below it."""

from __future__ import annotations

import pytest

from chat.models import Conversation, Message, Retry, ShareLink, Turn, turn_rows

pytestmark = pytest.mark.django_db


def finish(retry: Retry | Turn, content: str) -> Turn:
    """The turn's answer, written."""
    turn = retry.turn if isinstance(retry, Retry) else retry
    turn.answer.content, turn.answer.status = content, Message.Status.DONE
    turn.answer.save()
    return turn


def shown(conversation: Conversation) -> list[str]:
    return list(conversation.messages.values_list("content", flat=True))


def sent(conversation: Conversation) -> list[str]:
    """What the next question would be sent with (system prompt aside)."""
    return [m["content"] for m in conversation.history_for_prompt()]


def versions_of(question: Message) -> list[str]:
    """The contents of the question's turn's versions, oldest first."""
    siblings = Message.objects.filter(
        conversation_id=question.conversation_id,
        role="user",
        parent_id=question.parent_id,
    )
    return list(siblings.order_by("pk").values_list("content", flat=True))


@pytest.fixture
def five(alice, thinker) -> Conversation:
    """Five finished turns: q1/a1 ... q5/a5."""
    conversation = Conversation.objects.create(owner=alice, title="Five")
    for n in range(1, 6):
        finish(turn_rows.begin_turn(conversation, f"q{n}", client_id=f"c{n}"), f"a{n}")
    return conversation


@pytest.fixture
def bobs(bob) -> dict[str, Message]:
    """A question and an answer of someone else's conversation."""
    conversation = Conversation.objects.create(owner=bob)
    return {
        role: conversation.messages.create(role=role, content="bob's")
        for role in ("user", "assistant")
    }


def question(conversation: Conversation, content: str) -> Message:
    return conversation.messages.get(role="user", content=content)


def test_each_message_follows_the_one_before(five):
    rows = list(five.messages.order_by("pk"))
    assert rows[0].parent_id is None
    assert [m.parent_id for m in rows[1:]] == [m.pk for m in rows[:-1]]


def test_editing_the_second_of_five_questions_keeps_the_old_branch(five):
    old = question(five, "q2")
    below = list(five.messages.filter(pk__gte=old.pk).values_list("pk", flat=True))

    retry = turn_rows.begin_edit(five, old.pk, "q2, reworded")
    assert retry.removed == below  # q2 to a5, oldest first
    assert retry.turn.history[-3:] == [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2, reworded"},
    ]
    assert len(retry.turn.history) == 3
    # The footer's "what was sent" counts the branch only.
    answer = retry.turn.answer
    assert (answer.history_sent, answer.history_total) == (3, 3)
    new = finish(retry, "a2'")
    assert new.question.parent_id == old.parent_id
    assert shown(five) == ["q1", "a1", "q2, reworded", "a2'"]
    # Nothing lost: the old branch is all there, off the shown one.
    kept = Message.objects.filter(pk__in=below, replaced=True)
    assert kept.count() == len(below) == 8
    assert versions_of(new.question) == ["q2", "q2, reworded"]
    assert new.answer.versions.number == 2 and new.answer.versions.count == 2
    assert new.answer.versions.previous_id == old.pk


def test_regenerating_an_earlier_answer_asks_its_question_again(five):
    a3 = five.messages.get(content="a3")
    retry = turn_rows.begin_regenerate(five, a3.pk)
    assert retry.turn.question.content == "q3"
    assert retry.turn.question.client_id == "c3"
    assert [m["content"] for m in retry.turn.history] == ["q1", "a1", "q2", "a2", "q3"]
    finish(retry, "a3'")
    assert shown(five) == ["q1", "a1", "q2", "a2", "q3", "a3'"]
    assert versions_of(retry.turn.question) == ["q3", "q3"]


def test_switching_back_at_turn_two_shows_the_old_turns_three_to_five(five):
    old = question(five, "q2")
    new = finish(turn_rows.begin_edit(five, old.pk, "q2'"), "a2'")
    finish(turn_rows.begin_turn(five, "q3'"), "a3'")

    switch = turn_rows.show_version(five, old.pk)
    assert [m.content for m in switch.shown] == [
        "q2", "a2", "q3", "a3", "q4", "a4", "q5", "a5",
    ]  # fmt: skip
    assert switch.removed == sorted(
        Message.objects.filter(content__in=["q2'", "a2'", "q3'", "a3'"]).values_list(
            "pk", flat=True
        )
    )
    assert shown(five) == ["q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4", "q5", "a5"]
    assert sent(five)[-2:] == ["q5", "a5"]
    answer = switch.shown[1]
    assert answer.versions.number == 1 and answer.versions.next_id == new.question.pk
    # The later answers have one version each: no control.
    assert [m.versions for m in switch.shown[3::2]] == [None, None, None]

    # And forward again: the branch last viewed below q2' comes back whole.
    forward = turn_rows.show_version(five, new.question.pk)
    assert [m.content for m in forward.shown] == ["q2'", "a2'", "q3'", "a3'"]
    assert sent(five) == ["q1", "a1", "q2'", "a2'", "q3'", "a3'"]


def test_a_switch_shows_below_the_branch_last_viewed_there(five):
    """Three levels: versions at turn 2, and at turn 3 under the first of them."""
    q2 = question(five, "q2")
    q3 = question(five, "q3")
    q3b = finish(
        turn_rows.begin_edit(five, q3.pk, "q3b"), "a3b"
    ).question  # turn 3: q3, q3b
    # Back to q3 (its old branch: q4, q5), then a new version of turn 2.
    turn_rows.show_version(five, q3.pk)
    q2b = finish(turn_rows.begin_edit(five, q2.pk, "q2b"), "a2b").question
    # Back to q2: below it, q3 and its branch, the one last viewed (not q3b,
    # the newest).
    turn_rows.show_version(five, q2.pk)
    assert shown(five) == ["q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4", "q5", "a5"]
    turn_rows.show_version(five, q3b.pk)
    turn_rows.show_version(five, q2b.pk)
    turn_rows.show_version(five, q2.pk)
    assert shown(five) == ["q1", "a1", "q2", "a2", "q3b", "a3b"]
    assert sent(five) == ["q1", "a1", "q2", "a2", "q3b", "a3b"]


def test_the_page_places_every_answer_among_its_turns_versions(five):
    q2, q4 = question(five, "q2"), question(five, "q4")
    turn_rows.show_version(
        five, finish(turn_rows.begin_edit(five, q2.pk, "q2b"), "a2b").question.pk
    )
    turn_rows.show_version(five, q2.pk)
    finish(turn_rows.begin_regenerate(five, five.messages.get(content="a4").pk), "a4b")
    answers = {m.content: m.versions for m in five.timeline() if m.role == "assistant"}
    assert answers["a1"] is None and answers["a3"] is None
    assert (answers["a2"].number, answers["a2"].count) == (1, 2)
    assert (answers["a4b"].number, answers["a4b"].count) == (2, 2)
    assert answers["a4b"].previous_id == q4.pk


def test_the_first_turn_has_versions_too(five):
    q1 = question(five, "q1")
    retry = turn_rows.begin_edit(five, q1.pk, "q1b")
    assert retry.turn.question.parent_id is None
    assert [m["content"] for m in retry.turn.history] == ["q1b"]
    finish(retry, "a1b")
    switch = turn_rows.show_version(five, q1.pk)
    assert len(switch.shown) == 10
    assert switch.shown[1].versions.count == 2


def test_showing_the_shown_version_changes_nothing(five):
    q2 = question(five, "q2")
    switch = turn_rows.show_version(five, q2.pk)
    assert switch.removed == []
    assert [m.content for m in switch.shown][:2] == ["q2", "a2"]
    assert shown(five)[-1] == "a5"


# Refusals: each leaves the conversation as it was.


def test_an_edit_of_what_is_not_a_shown_question_is_refused(five, bobs):
    q2 = question(five, "q2")
    finish(turn_rows.begin_edit(five, q2.pk, "q2b"), "a2b")  # q2..a5 now off the branch
    foreign = bobs["user"]
    a1 = five.messages.get(content="a1")
    before = shown(five)
    for message_id in (a1.pk, q2.pk, foreign.pk, 10**12):
        with pytest.raises(Conversation.NotAQuestion):
            turn_rows.begin_edit(five, message_id, "changed")
    assert shown(five) == before
    assert not Message.objects.filter(content="changed").exists()


def test_a_regenerate_of_what_is_not_a_shown_answer_is_refused(five, bobs):
    q2 = question(five, "q2")
    a3 = five.messages.get(content="a3")
    finish(turn_rows.begin_edit(five, q2.pk, "q2b"), "a2b")
    foreign = bobs["assistant"]
    before = shown(five)
    for message_id in (q2.pk, a3.pk, foreign.pk, 10**12):
        with pytest.raises(Conversation.NothingToRegenerate):
            turn_rows.begin_regenerate(five, message_id)
    assert shown(five) == before


def test_an_edit_regenerate_or_switch_while_an_answer_streams_is_refused(five):
    q2 = question(five, "q2")
    finish(turn_rows.begin_edit(five, q2.pk, "q2b"), "a2b")
    turn_rows.begin_turn(five, "q3b")  # its answer still streaming
    before = shown(five)
    with pytest.raises(Conversation.Busy):
        turn_rows.begin_edit(five, q2.pk, "changed")
    with pytest.raises(Conversation.Busy):
        turn_rows.begin_regenerate(five, five.messages.get(content="a1").pk)
    with pytest.raises(Conversation.Busy):
        turn_rows.show_version(five, q2.pk)
    assert shown(five) == before


def test_a_switch_to_a_version_of_a_turn_not_shown_is_refused(five, bobs):
    q2, q3 = question(five, "q2"), question(five, "q3")
    finish(turn_rows.begin_edit(five, q3.pk, "q3b"), "a3b")
    finish(turn_rows.begin_edit(five, q2.pk, "q2b"), "a2b")
    # q3b and q3 are versions of a turn below q2, which is not shown now.
    foreign = bobs["user"]
    a1 = five.messages.get(content="a1")
    before = shown(five)
    for message_id in (q3.pk, a1.pk, foreign.pk, 10**12):
        with pytest.raises(Conversation.NotAVersion):
            turn_rows.show_version(five, message_id)
    assert shown(five) == before


# A snapshot link keeps the branch that was shown when it was made.


def test_a_snapshot_keeps_its_branch_after_a_switch(five):
    link, _ = ShareLink.create_for(five)
    q2 = question(five, "q2")
    finish(turn_rows.begin_edit(five, q2.pk, "q2b"), "a2b")
    contents = list(link.visible_messages().values_list("content", flat=True))
    assert contents == ["q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4", "q5", "a5"]
    link.update_snapshot()
    contents = list(link.visible_messages().values_list("content", flat=True))
    assert contents == ["q1", "a1", "q2b", "a2b"]


def chain(conversation: Conversation, contents: list[str], **fields) -> list[Message]:
    """Questions and answers alternating, one after another, in bulk."""
    return Message.objects.append_branch(
        [
            Message(
                conversation=conversation,
                role="user" if n % 2 == 0 else "assistant",
                content=content,
                **fields,
            )
            for n, content in enumerate(contents)
        ]
    )


def test_a_deep_and_wide_tree_switches_in_one_go(alice, thinker):
    """200 turns deep, 50 versions wide at turn 100 (`bench.pages` times it)."""
    conversation = Conversation.objects.create(owner=alice, title="Deep")
    rows = chain(conversation, [f"{k}{n}" for n in range(200) for k in "qa"])
    q100 = rows[200]
    for version in range(49):
        question, _ = chain(
            conversation, [f"q100 v{version}", f"v{version}"], replaced=True
        )
        question.parent_id = q100.parent_id
        question.save(update_fields=["parent"])
    newest = turn_rows.show_version(conversation, question.pk)
    assert [m.content for m in newest.shown] == ["q100 v48", "v48"]
    assert newest.shown[1].versions.number == newest.shown[1].versions.count == 50
    assert len(newest.removed) == 200

    switch = turn_rows.show_version(conversation, q100.pk)
    assert len(switch.shown) == 200
    assert (switch.shown[1].versions.number, switch.shown[1].versions.count) == (1, 50)
    assert shown(conversation)[-1] == "a199"
    assert len(shown(conversation)) == 400
