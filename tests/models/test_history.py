"""The history builder (chat.models.history) through Conversation.build_prompt."""

from __future__ import annotations

import pytest

from chat.models import (
    Conversation,
    History,
    Message,
    ModelProfile,
    SiteDefaults,
    turn_rows,
)
from chat.models.history import MESSAGE_OVERHEAD_CHARS, build_prompt, turns

pytestmark = pytest.mark.django_db


@pytest.fixture
def profile():
    return ModelProfile.objects.create(
        tag="deepseek-r1:8b",
        base_url="http://127.0.0.1:11434",
        supports_thinking=True,
        context_length=1000,
        options={"num_predict": 200},
    )


@pytest.fixture
def chat(alice, profile):
    return Conversation.objects.create(
        owner=alice, model_profile=profile, system_prompt="Be brief"
    )


def add_turns(conversation, count, size=10):
    """`count` finished turns: question qN and answer aN, each `size` chars."""
    for n in range(1, count + 1):
        conversation.messages.create(role="user", content=f"q{n}".ljust(size, "."))
        conversation.messages.create(
            role="assistant", content=f"a{n}".ljust(size, "."), thinking="hidden"
        )


def ask(conversation, text="now?"):
    conversation.messages.create(role="user", content=text)
    return conversation.build_prompt()


def contents(prompt):
    return [m["content"].rstrip(".") for m in prompt.messages]


def test_all_sends_every_finished_message_without_thinking(chat):
    add_turns(chat, 3)
    prompt = ask(chat)
    assert contents(prompt) == ["Be brief", "q1", "a1", "q2", "a2", "q3", "a3", "now?"]
    assert all(set(m) == {"role", "content"} for m in prompt.messages)
    assert (prompt.sent, prompt.total) == (7, 7)


def test_failed_empty_and_streaming_answers_are_never_sent(chat):
    chat.messages.create(role="user", content="q1")
    chat.messages.create(role="assistant", content="half", status="error")
    chat.messages.create(role="assistant", content="", status="stopped")
    chat.messages.create(role="user", content="q2")
    chat.messages.create(role="assistant", content="kept", status="stopped")
    prompt = ask(chat)
    assert contents(prompt) == ["Be brief", "q1", "q2", "kept", "now?"]
    assert prompt.total == 4


def test_last_n_sends_exactly_the_n_newest_earlier_messages(chat):
    chat.history_policy, chat.history_last_n = "last_n", 3
    add_turns(chat, 4)
    prompt = ask(chat)
    assert contents(prompt) == ["Be brief", "a3", "q4", "a4", "now?"]
    assert (prompt.sent, prompt.total) == (4, 9)


def test_last_zero_and_none_send_only_the_system_prompt_and_question(chat):
    add_turns(chat, 2)
    chat.history_policy, chat.history_last_n = "last_n", 0
    assert contents(ask(chat)) == ["Be brief", "now?"]
    chat.history_policy = "none"
    prompt = chat.build_prompt()
    assert contents(prompt) == ["Be brief", "now?"]
    assert (prompt.sent, prompt.total) == (1, 5)


def test_fit_keeps_the_newest_whole_turns_that_fit(chat, profile):
    # 1000 tokens of context, 200 kept for the answer: 800 tokens, 3200 chars.
    chat.history_policy = "fit"
    add_turns(chat, 10, size=400)  # a turn: 2 * 416 chars
    prompt = ask(chat)
    turn_chars = 2 * (400 + MESSAGE_OVERHEAD_CHARS)
    fixed = len("Be brief") + len("now?") + 2 * MESSAGE_OVERHEAD_CHARS
    whole_turns = (3200 - fixed) // turn_chars
    assert whole_turns == 3
    assert contents(prompt) == [
        "Be brief",
        "q8",
        "a8",
        "q9",
        "a9",
        "q10",
        "a10",
        "now?",
    ]
    assert prompt.tokens_estimate <= 800
    assert prompt.chars == fixed + whole_turns * turn_chars
    assert prompt.context_tokens == 1000


def test_fit_drops_a_turn_whole_rather_than_split_it(chat):
    chat.history_policy = "fit"
    chat.messages.create(role="user", content="old question")
    chat.messages.create(role="assistant", content="x" * 2000)
    chat.messages.create(role="user", content="y" * 2000)
    chat.messages.create(role="assistant", content="short")
    prompt = ask(chat)
    # The newest turn fits; the older one would only fit without its answer.
    assert contents(prompt)[1:] == ["y" * 2000, "short", "now?"]


def test_fit_never_skips_a_big_turn_to_send_an_older_small_one(chat):
    chat.history_policy = "fit"
    chat.messages.create(role="user", content="small and old")
    chat.messages.create(role="assistant", content="ok")
    chat.messages.create(role="user", content="z" * 5000)
    chat.messages.create(role="assistant", content="big")
    assert contents(ask(chat)) == ["Be brief", "now?"]


def test_fit_always_keeps_the_system_prompt_and_question_even_if_too_long(chat):
    chat.history_policy = "fit"
    add_turns(chat, 2)
    prompt = ask(chat, "w" * 10_000)
    assert [m["role"] for m in prompt.messages] == ["system", "user"]
    assert prompt.tokens_estimate > prompt.context_tokens


def test_fit_uses_the_profiles_calibrated_ratio(chat, profile):
    chat.history_policy = "fit"
    add_turns(chat, 10, size=400)
    profile.chars_per_token = 2.0  # half the room of the default four
    profile.save()
    prompt = ask(chat)
    assert contents(prompt)[1:-1] == ["q10", "a10"]
    assert prompt.tokens_estimate == -(-prompt.chars // 2)


def test_answer_reserve_comes_from_num_predict_else_a_quarter(profile):
    assert profile.answer_reserve_tokens() == 200
    profile.options = {}
    assert profile.answer_reserve_tokens() == 250
    profile.context_length = 131072
    assert profile.answer_reserve_tokens() == 4096


def test_a_leading_answer_without_question_is_its_own_turn():
    messages = [
        Message(role="assistant", content="hello"),
        Message(role="user", content="q"),
        Message(role="assistant", content="a"),
    ]
    assert [[m.content for m in t] for t in turns(messages)] == [["hello"], ["q", "a"]]


def test_without_a_new_question_the_policy_still_applies():
    messages = [
        Message(role="user", content="q"),
        Message(role="assistant", content="a"),
    ]
    prompt = build_prompt(
        messages,
        system_prompt="",
        policy="last_n",
        last_n=1,
        context_tokens=100,
        answer_tokens=10,
        chars_per_token=4,
    )
    assert prompt.messages == [{"role": "assistant", "content": "a"}]


def test_the_policy_comes_from_the_model_then_the_site(chat, profile):
    add_turns(chat, 3)
    site = SiteDefaults.load()
    site.default_history_policy, site.default_history_last_n = "last_n", 2
    site.save()
    assert contents(ask(chat))[1:] == ["q3", "a3", "now?"]
    profile.default_history_policy = "none"
    profile.save()
    assert contents(chat.build_prompt())[1:] == ["now?"]
    chat.history_policy = "all"
    assert len(chat.build_prompt().messages) == 8


def test_begin_turn_records_what_was_sent(chat):
    chat.history_policy, chat.history_last_n = "last_n", 2
    chat.save()
    add_turns(chat, 3)
    turn = turn_rows.begin_turn(chat, "and now?")
    answer = turn.answer
    assert [m["content"] for m in turn.history][1:] == [
        "q3........",
        "a3........",
        "and now?",
    ]
    assert (answer.history_sent, answer.history_total) == (3, 7)
    assert answer.context_tokens == 1000
    assert answer.prompt_chars == sum(
        len(m["content"]) + MESSAGE_OVERHEAD_CHARS for m in turn.history
    )
    assert answer.prompt_tokens_estimate == -(-answer.prompt_chars // 4)
    assert turn.options == {"num_predict": 200, "num_ctx": 1000}


def test_the_footer_says_what_was_sent():
    message = Message(
        history_sent=14,
        history_total=52,
        prompt_tokens_estimate=6246,
        context_tokens=8192,
    )
    assert message.history_summary == "14 of 52 messages, ~6.1k of 8k tokens"
    assert Message(history_sent=1, history_total=1).history_summary == (
        "1 of 1 message"
    )
    assert Message(
        history_sent=0, history_total=1, prompt_tokens_estimate=1, context_tokens=1
    ).history_summary == ("0 of 1 message, ~1 of 1 token")
    assert Message().history_summary == ""
    small = Message(
        history_sent=2, history_total=2, prompt_tokens_estimate=40, context_tokens=32768
    )
    assert small.history_summary == "2 of 2 messages, ~40 of 32k tokens"


# Calibration: the server's prompt token counts teach the profile its ratio.


def finished(profile, chars, tokens):
    return Message(prompt_chars=chars, prompt_tokens=tokens)


def test_the_first_measurement_sets_the_ratio_then_later_ones_move_it(profile):
    assert profile.estimated_chars_per_token == 4.0
    assert profile.learn_from(finished(profile, 3000, 1000))
    profile.refresh_from_db()
    assert profile.chars_per_token == 3.0
    assert profile.learn_from(finished(profile, 5000, 1000))
    profile.refresh_from_db()
    assert profile.chars_per_token == pytest.approx(3.6)
    assert profile.estimated_chars_per_token == pytest.approx(3.6)


def test_an_answer_that_agrees_with_the_learnt_ratio_writes_nothing(profile):
    assert profile.learn_from(finished(profile, 3000, 1000))
    ModelProfile.objects.filter(pk=profile.pk).update(chars_per_token=5.0)
    # Within 1% of what this copy learnt: nothing to write.
    assert not profile.learn_from(finished(profile, 3020, 1000))
    assert ModelProfile.objects.get(pk=profile.pk).chars_per_token == 5.0
    assert profile.chars_per_token == 3.0
    assert profile.learn_from(finished(profile, 3100, 1000))
    assert profile.chars_per_token == pytest.approx(3.03)
    assert ModelProfile.objects.get(pk=profile.pk).chars_per_token == pytest.approx(
        5.0 + 0.3 * (3.1 - 5.0)
    )


def test_answers_calibrating_at_once_all_count(profile):
    # Another process's copy of the profile, read before the first answer
    # calibrated it: the step is taken from the row, not from the copy.
    other = ModelProfile.objects.get(pk=profile.pk)
    assert profile.learn_from(finished(profile, 3000, 1000))
    assert other.learn_from(finished(other, 5000, 1000))
    profile.refresh_from_db()
    assert profile.chars_per_token == pytest.approx(3.6)


def test_missing_or_implausible_figures_teach_nothing(profile):
    assert not profile.learn_from(finished(profile, None, 100))
    assert not profile.learn_from(finished(profile, 4000, None))
    # A cached prompt prefix: the server counted only the new tokens.
    assert not profile.learn_from(finished(profile, 40_000, 100))
    assert not profile.learn_from(finished(profile, 7000, 1000))  # part cached
    assert not profile.learn_from(finished(profile, 100, 400))
    profile.refresh_from_db()
    assert profile.chars_per_token is None


def test_calibration_changes_what_fits(chat, profile):
    chat.history_policy = "fit"
    add_turns(chat, 10, size=400)
    before = len(ask(chat).messages)
    profile.learn_from(finished(profile, 2000, 1000))  # 2 chars a token
    assert len(chat.build_prompt(profile).messages) < before


def test_history_settings_read_as_the_panel_and_notices_say_them():
    assert str(History("last_n", 4)) == "last 4 messages"
    assert str(History("last_n", 1)) == "last message"
    assert str(History("fit", 0)) == "fit the model's context"
    assert str(History("none", 0)) == "none"
    assert str(History("all", 0)) == "all messages"
