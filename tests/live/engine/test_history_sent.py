"""What the model server receives: the history policy, calibration and options
end to end, through the socket and the runner, asserted on the simulator's log."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from chat.models import Message, turn_rows
from tests.support.communicators import answer_of, connect, frames_until, send
from tests.support.waiting import calibrated

pytestmark = pytest.mark.django_db(transaction=True)


async def finished_turns(conversation, count):
    for n in range(1, count + 1):
        await conversation.messages.acreate(role="user", content=f"question {n}")
        await conversation.messages.acreate(
            role="assistant", content=f"answer {n}", thinking=f"thought {n}"
        )


async def test_last_4_messages_sends_exactly_those(alice, conversation, simulator):
    conversation.system_prompt = "You are terse."
    conversation.history_policy, conversation.history_last_n = "last_n", 4
    conversation.temperature = 0.25
    await conversation.asave()
    await finished_turns(conversation, 5)
    await conversation.messages.acreate(role="assistant", content="", status="error")

    communicator = await connect(alice, conversation)
    await send(communicator, "question 6")
    await frames_until(communicator, "done")
    final = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()

    request = (await simulator.wait_for_end()).body
    assert request["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "question 4"},
        {"role": "assistant", "content": "answer 4"},
        {"role": "user", "content": "question 5"},
        {"role": "assistant", "content": "answer 5"},
        {"role": "user", "content": "question 6"},
    ]
    # The conversation's temperature over the Qwen3 model's recommended sampling.
    assert request["options"] == {
        "num_ctx": 8192,
        "temperature": 0.25,
        "top_p": 0.95,
        "top_k": 20,
        "min_p": 0.0,
    }

    answer = await answer_of(conversation)
    assert (answer.history_sent, answer.history_total) == (5, 11)
    assert answer.context_tokens == 8192 and answer.prompt_tokens_estimate
    assert "5 of 11 messages, ~" in final["message"]["html"]
    assert "of 8k tokens" in final["message"]["html"]


async def test_an_answer_teaches_the_profile_its_token_ratio(
    alice, conversation, simulator, demo_profile
):
    await finished_turns(conversation, 3)
    communicator = await connect(alice, conversation)
    await send(communicator, "and then?")
    await frames_until(communicator, "done")
    await communicator.disconnect()
    await simulator.wait_for_end()

    answer = await answer_of(conversation)
    assert answer.status == Message.Status.DONE and answer.prompt_tokens
    # Calibrated after the final frames (it delays nobody): wait for it.
    profile = await calibrated(demo_profile.pk)
    # The simulator counts about four characters a token plus a few per
    # message, which is what our per-message allowance assumes.
    assert profile.chars_per_token == pytest.approx(
        answer.prompt_chars / answer.prompt_tokens, abs=1e-3
    )
    assert 3.5 <= profile.chars_per_token <= 4.5


async def test_no_history_sends_only_the_system_prompt_and_question(
    alice, conversation, simulator
):
    conversation.history_policy = "none"
    await conversation.asave()
    await finished_turns(conversation, 2)
    communicator = await connect(alice, conversation)
    await send(communicator, "alone")
    await frames_until(communicator, "done")
    await communicator.disconnect()
    request = (await simulator.wait_for_end()).body
    assert request["messages"] == [{"role": "user", "content": "alone"}]


async def test_the_history_sent_follows_the_version_shown(
    alice, conversation, simulator
):
    simulator.config.answer_text = "The first answer."
    communicator = await connect(alice, conversation)
    await send(communicator, "question 1")
    await frames_until(communicator, "done")
    simulator.config.answer_text = "The second answer."
    await communicator.send_json_to({"type": "regenerate"})
    await frames_until(communicator, "done")
    await simulator.wait_for_end()
    questions = Message.objects.filter(conversation=conversation, role="user")
    first = await questions.order_by("pk").values_list("pk", flat=True).afirst()
    await database_sync_to_async(turn_rows.show_version)(conversation, first)

    await send(communicator, "question 2")
    await frames_until(communicator, "done")
    await communicator.disconnect()
    request = (await simulator.wait_for_end()).body
    assert request["messages"] == [
        {"role": "user", "content": "question 1"},
        {"role": "assistant", "content": "The first answer."},
        {"role": "user", "content": "question 2"},
    ]


async def ask(communicator, simulator, frame: dict, answer: str) -> list[dict]:
    """One turn (a send, an edit or a regenerate) answered with `answer`: the
    messages the model server received for it."""
    simulator.config.answer_text = answer
    await communicator.send_json_to(frame)
    await frames_until(communicator, "done")
    await communicator.receive_json_from(timeout=5)  # the stored answer
    return (await simulator.wait_for_end()).body["messages"]


async def question_id(content: str) -> int:
    return (await Message.objects.filter(role="user", content=content).alast()).pk


async def answer_id(content: str) -> int:
    return (await Message.objects.filter(content=content).alast()).pk


@pytest.mark.parametrize(
    ("policy", "last_n", "kept"),
    [("all", None, None), ("last_n", 3, 4), ("fit", None, None), ("none", None, 1)],
)
async def test_the_history_sent_follows_the_branch_of_a_three_level_tree(
    alice, conversation, simulator, policy, last_n, kept
):
    """q1 → q2 → q3; q2 edited (q2b → q3b); back at q2, q3's answer regenerated;
    then a new question on each branch: each request holds its branch only, cut
    by the policy."""
    conversation.history_policy, conversation.history_last_n = policy, last_n
    await conversation.asave()
    communicator = await connect(alice, conversation)

    def send_frame(text: str) -> dict:
        return {"type": "send", "content": text, "client_id": text}

    def branch(*texts: str) -> list[dict]:
        every = [
            {"role": "user" if n % 2 == 0 else "assistant", "content": text}
            for n, text in enumerate(texts)
        ]
        return every[-kept:] if kept else every

    for n in (1, 2, 3):
        await ask(communicator, simulator, send_frame(f"q{n}"), f"a{n}")
    edit = {"type": "edit", "message_id": await question_id("q2"), "content": "q2b"}
    assert await ask(communicator, simulator, edit, "a2b") == branch("q1", "a1", "q2b")
    sent = await ask(communicator, simulator, send_frame("q3b"), "a3b")
    assert sent == branch("q1", "a1", "q2b", "a2b", "q3b")

    await database_sync_to_async(turn_rows.show_version)(
        conversation, await question_id("q2")
    )
    regenerate = {"type": "regenerate", "message_id": await answer_id("a3")}
    sent = await ask(communicator, simulator, regenerate, "a3, again")
    assert sent == branch("q1", "a1", "q2", "a2", "q3")
    sent = await ask(communicator, simulator, send_frame("q4"), "a4")
    assert sent == branch("q1", "a1", "q2", "a2", "q3", "a3, again", "q4")

    await database_sync_to_async(turn_rows.show_version)(
        conversation, await question_id("q2b")
    )
    sent = await ask(communicator, simulator, send_frame("q4b"), "a4b")
    await communicator.disconnect()
    assert sent == branch("q1", "a1", "q2b", "a2b", "q3b", "a3b", "q4b")
