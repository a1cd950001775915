"""What a turn offers (chat/live/engine/turn/offer.py) and what its later
model calls are asked with, through the owner's socket against the
simulator: tools only to a model that calls them (else a notice, and the
answer without them), thinking off in a turn with tools unless the profile
keeps it, what was sent counting the specs and the steps, and the quotas
checked again before each further model call."""

from __future__ import annotations

import math

from asgiref.sync import sync_to_async

from chat.live.engine.turn.offer import TOOLS_UNSUPPORTED
from chat.models import SiteDefaults
from chat.models.history import message_chars, step_chars, tools_chars
from tests.live.engine.admission.queueing import on_database
from tests.live.engine.turn.tools_source import SPECS
from tests.support.communicators import answer_of, connect, frames_until, send

pytestmark = on_database

QUESTION = "Please use echo to say hi"


async def ask(alice, conversation, question: str = QUESTION) -> list[dict]:
    """The frames of one turn, up to its stored message (after `done`)."""
    socket = await connect(alice, conversation)
    await send(socket, question)
    frames = await frames_until(socket, "done")
    frames += await frames_until(socket, "message")
    await socket.disconnect()
    return frames


async def test_a_model_that_cannot_call_tools_answers_without_them_and_says_so(
    alice, conversation, demo_profile, simulator, probe
):
    demo_profile.supports_tools = False
    await demo_profile.asave()
    frames = await ask(alice, conversation)
    assert not [f for f in frames if f["type"].startswith("tool_")]
    assert frames[-2]["status"] == "done"  # a notice, not a failure
    [request] = simulator.asked
    assert not request.body.get("tools")
    answer = await answer_of(conversation)
    assert answer.error_code == TOOLS_UNSUPPORTED and answer.content
    assert "cannot call them" in answer.error_detail
    assert "does not list tools among its capabilities" in answer.error_detail
    assert not answer.steps and not probe.ran
    # Shown under the answer, as a notice.
    html = frames[-1]["message"]["html"]
    assert 'data-notice="tools_unsupported"' in html and "cannot call them" in html


async def test_an_openai_profile_not_marked_says_the_admin_has_not(
    alice, conversation, demo_profile, simulator, probe
):
    demo_profile.supports_tools = False
    demo_profile.backend = demo_profile.Backend.OPENAI
    await demo_profile.asave()
    await ask(alice, conversation)
    answer = await answer_of(conversation)
    assert answer.error_code == TOOLS_UNSUPPORTED
    assert "an admin has not marked it as able to call tools" in answer.error_detail


async def test_a_turn_with_tools_does_not_think_unless_its_profile_keeps_it(
    alice, conversation, demo_profile, simulator, probe
):
    frames = await ask(alice, conversation)
    assert next(f for f in frames if f["type"] == "start")["thinking"] is False
    assert [e.body.get("think") for e in simulator.asked] == [False, False]
    # Qwen3's sampling for answers without thinking.
    assert simulator.asked[0].body["options"]["top_p"] == 0.8
    answer = await answer_of(conversation)
    assert answer.thinking_enabled is False and not answer.thinking
    assert not answer.error_code  # not a notice: the profile's choice

    demo_profile.think_with_tools = True
    await demo_profile.asave()
    await ask(alice, conversation, "Use echo again")
    again = simulator.asked[2:]
    assert [e.body.get("think") for e in again] == [True, True]
    assert again[0].body["options"]["top_p"] == 0.95
    assert (await answer_of(conversation)).thinking_enabled is True


async def test_without_tools_the_conversation_thinks_as_before(
    alice, conversation, simulator
):
    await ask(alice, conversation, "Why is the sky blue?")
    assert [e.body.get("think") for e in simulator.asked] == [True]


async def test_what_was_sent_counts_the_tools_and_the_steps(
    alice, conversation, simulator, probe
):
    await ask(alice, conversation)
    answer = await answer_of(conversation)
    [tool] = [p for p in answer.steps if p["kind"] == "tool"]
    first_content = "".join(
        p["text"]
        for p in answer.steps[: answer.steps.index(tool)]
        if p["kind"] == "content"
    )
    steps = [
        {
            "role": "assistant",
            "content": first_content,
            "tool_calls": [
                {
                    "id": tool["id"],
                    "type": "function",
                    "function": {"name": "echo", "arguments": tool["arguments"]},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": tool["id"],
            "name": "echo",
            "content": tool["text"],
        },
    ]
    specs = tools_chars([spec.offered() for spec in SPECS])
    assert specs > 0 and step_chars(steps) > len(tool["text"])
    expected = message_chars(QUESTION) + specs + step_chars(steps)
    assert answer.prompt_chars == expected
    assert answer.prompt_tokens_estimate == math.ceil(expected / 4)
    # The page's "what was sent" shows that estimate.
    assert answer.history_summary


async def test_an_answers_quota_ends_the_turn_before_its_next_model_call(
    alice, conversation, simulator, probe
):
    @sync_to_async
    def limit() -> None:
        site = SiteDefaults.load()
        site.user_answers = 1  # the first model call is the last
        site.save()

    await limit()
    frames = await ask(alice, conversation)
    assert len(simulator.asked) == 1
    errors = [f for f in frames if f["type"] == "error"]
    assert [e["code"] for e in errors] == ["quota_reached"]
    assert errors[0]["detail"].startswith("Your quota is reached (1 of 1 answers)")
    assert "ends with what it has" in errors[0]["detail"]
    assert "round" not in [f["type"] for f in frames]
    done = next(f for f in frames if f["type"] == "done")
    assert done["status"] == "done"
    answer = await answer_of(conversation)
    assert answer.error_code == "quota_reached" and answer.model_calls == 1
    # Every finished step kept: the call and what it gave.
    [tool] = [p for p in answer.steps if p["kind"] == "tool"]
    assert tool["ok"] and tool["text"].startswith("probe says")
    assert 'data-notice="quota_reached"' in frames[-1]["message"]["html"]


async def test_a_token_quota_gives_the_next_call_what_is_left(
    alice, conversation, simulator, probe
):
    limit = 5000

    @sync_to_async
    def set_limit() -> None:
        site = SiteDefaults.load()
        site.user_output_tokens = limit
        site.save()

    await set_limit()
    await ask(alice, conversation)
    first, second = simulator.asked
    # The first call reserved all the limit allows; the second may write what
    # the first left of it (the quota checked again between them).
    assert first.body["options"]["num_predict"] == limit
    assert 0 < second.body["options"]["num_predict"] < limit
    answer = await answer_of(conversation)
    assert answer.status == "done" and not answer.error_code
    assert answer.output_tokens <= limit
