"""An output-token quota holds under concurrency on the sockets: ten questions
sent at once from ten conversations, half on each of two real Daphne
processes, take no more than the limit. Each admitted answer reserves what it
may use and asks the model server for no more; the others are refused with
the quota's own `quota_reached` frame, their question not stored."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async

from chat.models import Conversation, Message, SiteDefaults, quotas
from tests.support.services.daphnes import open_socket, send
from tests.support.waiting import until

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 300
QUESTIONS = 10


async def outcome(ws) -> dict:
    """The frame that ends a sent question: `done`, or a refusal (`error`)."""
    async with asyncio.timeout(60):
        async for raw in ws:
            frame = json.loads(raw)
            if frame["type"] in ("done", "error"):
                return frame
    raise AssertionError("socket closed before its answer ended")


@pytest.mark.parametrize(
    ("num_predict", "admitted"),
    [(None, 1), (100, 3)],
    ids=["the-remaining-allowance", "the-models-num-predict"],
)
async def test_ten_questions_at_once_stay_within_the_token_quota(
    daphnes, alice, demo_profile, simulator, session_cookie, num_predict, admitted
):
    @sync_to_async
    def setup() -> tuple[list[Conversation], str]:
        site = SiteDefaults.load()
        site.user_output_tokens = LIMIT
        site.save()  # the default 3 running answers per user stays
        if num_predict is not None:
            demo_profile.options = {"num_predict": num_predict}
            demo_profile.save()
        conversations = [
            Conversation.objects.create(owner=alice, model_profile=demo_profile)
            for _ in range(QUESTIONS)
        ]
        return conversations, session_cookie(alice)

    conversations, cookie = await setup()
    # 300 tokens an answer, unless it is asked for fewer; long enough to overlap.
    simulator.config.think_tokens, simulator.config.answer_tokens = 50, 250
    simulator.config.tps = 300
    sockets = [
        await open_socket(daphnes[i % 2], conversation, cookie)
        for i, conversation in enumerate(conversations)
    ]
    try:
        await asyncio.gather(*(send(ws, "Why is the sky blue?") for ws in sockets))
        ends = await asyncio.gather(*(outcome(ws) for ws in sockets))
    finally:
        for ws in sockets:
            await ws.close()

    done = [f for f in ends if f["type"] == "done"]
    refused = [f for f in ends if f["type"] == "error"]
    assert len(done) == admitted
    for frame in refused:
        assert frame["code"] == "quota_reached"
        assert frame["message_id"] is None
        assert frame["detail"].startswith(
            f"Your quota is reached ({LIMIT} of {LIMIT} output tokens)"
        )
    reservation = num_predict or LIMIT
    assert [e.body["options"]["num_predict"] for e in simulator.log] == [
        reservation
    ] * admitted

    async def all_saved() -> bool:
        streaming = Message.objects.filter(status=Message.Status.STREAMING)
        return not await streaming.aexists()

    await until(all_saved, "an answer was still streaming")

    @sync_to_async
    def stored() -> tuple[int, int, int]:
        answers = Message.objects.answers()
        return (
            answers.filter(status=Message.Status.DONE).count(),
            Message.objects.filter(role=Message.Role.USER).count(),
            quotas.usage(alice, "day")[1],
        )

    answers, questions, used = await stored()
    assert (answers, questions) == (admitted, admitted)
    assert used <= LIMIT  # the overshoot allowed is one reservation: here none
