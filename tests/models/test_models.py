from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from chat.models import Conversation, Message, ModelProfile

pytestmark = pytest.mark.django_db


@pytest.fixture
def thinker():
    return ModelProfile.objects.create(
        tag="qwen3:8b",
        base_url="http://127.0.0.1:11434",
        supports_thinking=True,
        context_length=16384,
        options={"temperature": 0.6},
    )


def test_think_flag_follows_conversation_then_profile_default(thinker):
    assert thinker.think_flag("on") is True
    assert thinker.think_flag("off") is False
    assert thinker.think_flag("default") is True
    thinker.default_thinking = "off"
    assert thinker.think_flag("default") is False


def test_think_flag_is_omitted_for_a_model_without_thinking(thinker):
    thinker.supports_thinking = False
    assert thinker.think_flag("on") is None


def test_request_options_always_carry_num_ctx(thinker):
    assert thinker.request_options() == {"temperature": 0.6, "num_ctx": 16384}


def test_a_blank_site_default_is_the_oldest_enabled_profile(thinker):
    ModelProfile.objects.create(tag="demo", base_url="http://x", is_demo=True)
    assert ModelProfile.objects.default() == thinker
    thinker.enabled = False
    thinker.save()
    assert ModelProfile.objects.default().tag == "demo"


def test_adding_a_profile_never_changes_the_default(alice):
    """A site on the demo model gets its first real model (whose server may not
    even be up): the conversations that follow the site default keep the demo
    until an admin chooses the new one as the site default."""
    from chat.models import SiteDefaults

    demo = ModelProfile.objects.create(tag="demo", base_url="http://x", is_demo=True)
    following = Conversation.objects.create(owner=alice)
    assert following.model_for_next_answer() == demo
    real = ModelProfile.objects.create(tag="qwen3:8b", base_url="http://127.0.0.1:9")
    assert following.model_for_next_answer() == demo
    assert Conversation.start(alice).model_profile == demo
    site = SiteDefaults.load()
    site.default_profile = real
    site.save()
    assert following.model_for_next_answer() == real


def test_label_marks_the_demo_model():
    assert ModelProfile(tag="t", is_demo=True).label == "t (demo model)"


def test_history_skips_thinking_streaming_and_empty_answers(alice, thinker):
    conversation = Conversation.objects.create(
        owner=alice, model_profile=thinker, system_prompt="Be brief."
    )
    conversation.messages.create(role="user", content="a")
    conversation.messages.create(role="assistant", content="b", thinking="secret")
    conversation.messages.create(role="user", content="c")
    conversation.messages.create(role="assistant", content="", status="error")
    conversation.messages.create(
        role="assistant", content="partial", status="streaming"
    )
    assert conversation.history_for_prompt() == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]


def test_begin_turn_stores_question_and_streaming_placeholder(alice, thinker):
    conversation = Conversation.objects.create(owner=alice, thinking="off")
    question, answer, profile, history, titled, _ = conversation.begin_turn(
        "Hi  there", "id-1"
    )
    assert profile == thinker and titled
    assert question.content == "Hi  there" and question.client_id == "id-1"
    assert answer.status == Message.Status.STREAMING
    assert answer.thinking_enabled is False and answer.model_tag == "qwen3:8b"
    assert history == [{"role": "user", "content": "Hi  there"}]
    conversation.refresh_from_db()
    assert conversation.title == "Hi there"
    assert conversation.model_profile is None  # it follows the site default
    with pytest.raises(Conversation.Busy):
        conversation.begin_turn("while it streams")
    answer.status = Message.Status.DONE
    answer.save()
    assert not conversation.begin_turn("again").titled
    assert conversation.messages.filter(role="user").count() == 2


def test_begin_turn_without_any_model_stores_nothing(alice):
    conversation = Conversation.objects.create(owner=alice)
    with pytest.raises(Conversation.NoModel):
        conversation.begin_turn("hello")
    assert not Message.objects.exists()


def test_title_is_shortened():
    title = Conversation().title_from("word " * 40)
    assert len(title) == 61 and title.endswith("…")


def test_orphaned_streaming_answers_are_marked_interrupted_with_text_kept(alice):
    conversation = Conversation.objects.create(owner=alice)
    old = conversation.messages.create(
        role="assistant", content="half", status="streaming"
    )
    fresh = conversation.messages.create(
        role="assistant", content="new", status="streaming"
    )
    Message.objects.filter(pk=old.pk).update(
        updated_at=timezone.now() - timedelta(seconds=30)
    )
    assert (
        Message.objects.mark_orphans_interrupted(older_than=timedelta(seconds=10)) == 1
    )
    old.refresh_from_db()
    fresh.refresh_from_db()
    assert old.status == "interrupted" and old.content == "half"
    assert fresh.status == "streaming"


def test_decode_rate_comes_from_the_servers_figures():
    assert Message(output_tokens=100, eval_ms=2000).decode_tps == 50
    assert Message(output_tokens=100).decode_tps is None


@pytest.fixture
def answered(alice, thinker):
    """A conversation of two finished turns."""
    conversation = Conversation.objects.create(owner=alice, title="Kept")
    for question, answer in (("one", "first"), ("two", "second")):
        conversation.messages.create(role="user", content=question, client_id="c")
        conversation.messages.create(role="assistant", content=answer, thinking="t")
    return conversation


def test_regenerate_replaces_the_last_answer_and_does_not_send_it(answered):
    last_question, last_answer = answered.messages.order_by("pk")[2:4]
    (question, answer, profile, history, titled, _), removed = (
        answered.begin_regenerate()
    )
    assert removed == [last_question.pk, last_answer.pk]
    # Kept, not shown: a retry that fails loses nothing.
    assert not Message.shown.filter(pk__in=removed).exists()
    kept = Message.objects.filter(pk__in=removed, replaced=True).order_by("pk")
    assert [m.content for m in kept] == ["two", "second"]
    assert question.content == "two" and question.client_id == "c"
    assert answer.status == Message.Status.STREAMING and answer.pk > question.pk
    assert history == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "first"},
        {"role": "user", "content": "two"},
    ]
    assert not titled
    answered.refresh_from_db()
    assert answered.title == "Kept"
    assert list(answered.messages.values_list("content", flat=True)) == [
        "one",
        "first",
        "two",
        "",
    ]


def test_regenerate_after_a_failed_answer_asks_again(answered):
    answered.messages.filter(content="second").update(status="error", content="")
    _, removed = answered.begin_regenerate()
    assert len(removed) == 2
    assert answered.messages.filter(status="error").count() == 0


def test_regenerate_is_refused_while_an_answer_streams(answered):
    answered.messages.filter(content="second").update(status="streaming")
    with pytest.raises(Conversation.Busy):
        answered.begin_regenerate()
    assert answered.messages.count() == 4


def test_regenerate_with_nothing_asked_yet_is_refused(alice, thinker):
    conversation = Conversation.objects.create(owner=alice)
    with pytest.raises(Conversation.NothingToRegenerate):
        conversation.begin_regenerate()
    assert not Message.objects.exists()


def test_regenerate_without_any_model_deletes_nothing(answered, thinker):
    thinker.enabled = False
    thinker.save()
    with pytest.raises(Conversation.NoModel):
        answered.begin_regenerate()
    assert answered.messages.count() == 4


def test_edit_changes_the_last_question_and_replaces_its_answer(answered):
    last_question = answered.messages.filter(role="user").last()
    (question, answer, _, history, _, _), removed = answered.begin_edit(
        last_question.pk, "two, reworded"
    )
    assert removed == [last_question.pk, last_question.pk + 1]
    assert question.content == "two, reworded"
    assert history[-1] == {"role": "user", "content": "two, reworded"}
    assert [m["content"] for m in history] == ["one", "first", "two, reworded"]
    assert answer.status == Message.Status.STREAMING


def test_only_the_last_question_can_be_edited(answered):
    first = answered.messages.filter(role="user").first()
    last_answer = answered.messages.filter(role="assistant").last()
    for message_id in (first.pk, last_answer.pk, 10_000):
        with pytest.raises(Conversation.NotLastQuestion):
            answered.begin_edit(message_id, "changed")
    assert list(answered.messages.values_list("content", flat=True)) == [
        "one",
        "first",
        "two",
        "second",
    ]


def test_edit_is_refused_while_an_answer_streams(answered):
    answered.messages.filter(content="second").update(status="streaming")
    last_question = answered.messages.filter(role="user").last()
    with pytest.raises(Conversation.Busy):
        answered.begin_edit(last_question.pk, "changed")
    last_question.refresh_from_db()
    assert last_question.content == "two"


# Versions of the last turn: every regenerate or edit makes one.


def finish(retry, content):
    """The retry's answer, written."""
    answer = retry.turn.answer
    answer.content, answer.status = content, Message.Status.DONE
    answer.save()
    return retry.turn


def shown_contents(conversation):
    return list(conversation.messages.values_list("content", flat=True))


def test_regenerates_and_edits_are_versions_of_the_last_turn(answered):
    first_question = answered.messages.filter(role="user").last()
    second = finish(answered.begin_regenerate(), "second, again")
    third = finish(answered.begin_edit(second.question.pk, "two, reworded"), "third")

    versions = answered.last_turn_versions()
    assert [(v.question.content, v.answer.content) for v in versions] == [
        ("two", "second"),
        ("two", "second, again"),
        ("two, reworded", "third"),
    ]
    assert [v.question.pk for v in versions] == [
        first_question.pk,
        second.question.pk,
        third.question.pk,
    ]
    assert [v.shown for v in versions] == [False, False, True]
    assert third.question.version_of_id == first_question.pk
    # The new answer, and the page's last answer, know where they stand.
    for answer in (third.answer, answered.timeline()[-1]):
        assert answer.versions.number == 3 and answer.versions.count == 3
        assert answer.versions.previous_id == second.question.pk
        assert answer.versions.next_id is None


def test_an_answer_never_regenerated_has_one_version_and_no_control(answered):
    assert len(answered.last_turn_versions()) == 1
    assert answered.timeline()[-1].versions is None
    assert Conversation.objects.create(owner=answered.owner).last_turn_versions() == []


def test_show_version_swaps_which_question_and_answer_are_shown(answered):
    first = answered.last_turn_versions()[0]
    newer = finish(answered.begin_regenerate(), "second, again")

    switch = answered.show_version(first.question.pk)
    assert switch.removed == [newer.question.pk, newer.answer.pk]
    assert switch.shown.answer.content == "second"
    assert switch.shown.answer.versions.number == 1
    assert switch.shown.answer.versions.next_id == newer.question.pk
    assert shown_contents(answered) == ["one", "first", "two", "second"]
    assert Message.objects.filter(pk__in=switch.removed, replaced=True).count() == 2
    # What the next question is sent with follows the shown version.
    assert [m["content"] for m in answered.history_for_prompt()] == [
        "one",
        "first",
        "two",
        "second",
    ]

    back = answered.show_version(newer.question.pk)
    assert back.removed == [first.question.pk, first.answer.pk]
    assert shown_contents(answered) == ["one", "first", "two", "second, again"]
    again = answered.show_version(newer.question.pk)  # already shown: no change
    assert again.removed == [] and again.shown.answer.versions.number == 2


def test_a_regenerate_of_an_older_version_adds_the_newest(answered):
    first = answered.last_turn_versions()[0]
    finish(answered.begin_regenerate(), "second, again")
    answered.show_version(first.question.pk)
    newest = finish(answered.begin_regenerate(), "second, third time")
    assert newest.answer.versions.number == newest.answer.versions.count == 3
    assert [v.answer.content for v in answered.last_turn_versions()] == [
        "second",
        "second, again",
        "second, third time",
    ]
    assert shown_contents(answered) == ["one", "first", "two", "second, third time"]


def test_show_version_is_refused_while_an_answer_streams(answered):
    first = answered.last_turn_versions()[0]
    answered.begin_regenerate()  # its answer is still streaming
    with pytest.raises(Conversation.Busy):
        answered.show_version(first.question.pk)
    assert shown_contents(answered) == ["one", "first", "two", ""]


def test_show_version_refuses_what_is_not_a_version_of_the_last_turn(answered, bob):
    finish(answered.begin_regenerate(), "second, again")
    elsewhere = Conversation.objects.create(owner=bob)
    foreign = elsewhere.messages.create(role="user", content="bob's")
    earlier = answered.messages.filter(role="user").first()
    answer = answered.messages.filter(role="assistant").last()
    for message_id in (earlier.pk, answer.pk, foreign.pk, 10_000):
        with pytest.raises(Conversation.NotAVersion):
            answered.show_version(message_id)
    assert shown_contents(answered) == ["one", "first", "two", "second, again"]
