from __future__ import annotations

from datetime import timedelta
from unittest.mock import patch

import pytest
from django.utils import timezone

from chat.models import Conversation, Message, ModelProfile, turn_rows

pytestmark = pytest.mark.django_db


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
    question, answer, profile, history, titled, *_ = turn_rows.begin_turn(
        conversation, "Hi  there", "id-1"
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
        turn_rows.begin_turn(conversation, "while it streams")
    answer.status = Message.Status.DONE
    answer.save()
    assert not turn_rows.begin_turn(conversation, "again").titled
    assert conversation.messages.filter(role="user").count() == 2


def test_a_first_question_is_stored_without_looking_for_its_parent(alice, thinker):
    """The turn read the branch already: a first question has no parent, and
    no query asks again (it would stand between the model server's first token
    and the page, docs/latency.md rule 8); a later one follows the answer."""
    conversation = Conversation.objects.create(owner=alice)
    with patch.object(Message, "last_shown_id", side_effect=AssertionError):
        first = turn_rows.begin_turn_of(conversation.pk, "First", "c1")
        Message.objects.filter(pk=first.answer.pk).update(status=Message.Status.DONE)
        second = turn_rows.begin_turn_of(conversation.pk, "Second", "c2")
    assert first.question.parent_id is None
    assert first.answer.parent_id == first.question.pk
    assert second.question.parent_id == first.answer.pk


def test_begin_turn_without_any_model_stores_nothing(alice):
    conversation = Conversation.objects.create(owner=alice)
    with pytest.raises(Conversation.NoModel):
        turn_rows.begin_turn(conversation, "hello")
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


def test_regenerate_replaces_the_last_answer_and_does_not_send_it(answered):
    last_question, last_answer = answered.messages.order_by("pk")[2:4]
    (question, answer, profile, history, titled, *_), removed = (
        turn_rows.begin_regenerate(answered)
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
    _, removed = turn_rows.begin_regenerate(answered)
    assert len(removed) == 2
    assert answered.messages.filter(status="error").count() == 0


def test_regenerate_is_refused_while_an_answer_streams(answered):
    answered.messages.filter(content="second").update(status="streaming")
    with pytest.raises(Conversation.Busy):
        turn_rows.begin_regenerate(answered)
    assert answered.messages.count() == 4


def test_regenerate_with_nothing_asked_yet_is_refused(alice, thinker):
    conversation = Conversation.objects.create(owner=alice)
    with pytest.raises(Conversation.NothingToRegenerate):
        turn_rows.begin_regenerate(conversation)
    assert not Message.objects.exists()


def test_regenerate_without_any_model_deletes_nothing(answered, thinker):
    thinker.enabled = False
    thinker.save()
    with pytest.raises(Conversation.NoModel):
        turn_rows.begin_regenerate(answered)
    assert answered.messages.count() == 4
