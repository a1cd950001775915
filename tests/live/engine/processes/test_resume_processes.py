"""A resume landing on another process than the answer's: an offset beyond the
text is refused there too (the owner checks it, the reader's socket says so)."""

from __future__ import annotations

import json

import pytest

from chat.models import Message
from tests.support.services.daphnes import frames_until, open_socket, send
from tests.support.threads import in_thread

pytestmark = [pytest.mark.django_db(transaction=True)]


async def refused_on_the_other_process(daphnes, conversation, alice, session_cookie):
    """An answer running on process 0, and a resume of it from beyond its text
    on process 1: (the owner's socket, the reader's, the answer's id, what the
    reader got up to the refusal)."""
    cookie = await in_thread(session_cookie, alice)
    owner = await open_socket(daphnes[0], conversation, cookie)
    await send(owner)
    first = await frames_until(owner, "content", timeout=60)
    message_id = first[-1]["message_id"]
    reader = await open_socket(daphnes[1], conversation, cookie)
    await reader.send(
        json.dumps({"type": "resume", "message_id": message_id, "offset": 10**9})
    )
    received = await frames_until(reader, "error", timeout=60)
    return owner, reader, message_id, received


async def test_a_resume_from_beyond_the_text_is_refused_by_the_owning_process(
    daphnes,
    conversation,
    alice,
    session_cookie,
    simulator,
):
    simulator.config.tps = 20
    simulator.config.answer_tokens = 2000
    owner, reader, message_id, received = await refused_on_the_other_process(
        daphnes, conversation, alice, session_cookie
    )
    assert received[-1]["code"] == "bad_offset", received
    assert received[-1]["message_id"] == message_id
    await owner.send(json.dumps({"type": "stop"}))
    assert (await frames_until(owner, "done", timeout=60))[-1]["status"] == "stopped"
    await owner.close()
    await reader.close()


async def test_after_a_refused_resume_nothing_of_the_answer_follows_until_its_end(
    daphnes,
    conversation,
    alice,
    session_cookie,
    simulator,
):
    """`bad_offset` ends that resume (README, the socket protocol): the answer's
    text is not sent from its start after it, which would land after the text
    the page has; the page resumes again, and the stored message still comes
    when the answer ends."""
    simulator.config.tps = 20
    simulator.config.answer_tokens = 2000
    owner, reader, message_id, received = await refused_on_the_other_process(
        daphnes, conversation, alice, session_cookie
    )
    assert received[-1]["code"] == "bad_offset"

    # The answer goes on (its deltas reach the reader's process) for a second.
    for _ in range(20):
        await frames_until(owner, "content", timeout=60)
    await owner.send(json.dumps({"type": "stop"}))
    assert (await frames_until(owner, "done", timeout=60))[-1]["status"] == "stopped"
    after = await frames_until(reader, "message", timeout=60)
    await owner.close()
    await reader.close()
    assert [f["type"] for f in after] == ["done", "message"], after
    stored = await Message.objects.aget(pk=message_id)
    assert after[-1]["message"]["content"] == stored.content
