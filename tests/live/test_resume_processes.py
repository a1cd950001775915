"""A resume landing on another process than the answer's: an offset beyond the
text is refused there too (the owner checks it, the reader's socket says so)."""

from __future__ import annotations

import json

import pytest

from tests.daphnes import frames_until, open_socket, send
from tests.threads import in_thread

pytestmark = [pytest.mark.django_db(transaction=True)]


async def test_a_resume_from_beyond_the_text_is_refused_by_the_owning_process(
    daphnes,
    conversation,
    alice,
    session_cookie,
    simulator,
):
    simulator.config.tps = 20
    simulator.config.answer_tokens = 2000
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
    assert received[-1]["code"] == "bad_offset", received
    assert received[-1]["message_id"] == message_id
    await owner.send(json.dumps({"type": "stop"}))
    assert (await frames_until(owner, "done", timeout=60))[-1]["status"] == "stopped"
    await owner.close()
    await reader.close()
