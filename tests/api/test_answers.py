"""`chat.api.answers`: an API answer is begun like a socket's turn, its model
server asked before the commit (docs/latency.md, rules 8 and 9)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from chat.models import Message
from tests.api.conftest import ASK, MODEL
from tests.refusals import refused, writes_held
from tests.waiting import until_sync

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_answer_refused_after_the_model_was_asked_closes_its_request(
    http, alice, alice_key, simulator, test_mode
):
    """The model server has the request while the commit waits (the tickets'
    writes are held); then the commit fails: a 503 `not_stored`, nothing
    stored, and the model server's request closed."""
    if test_mode == "sqlite":
        pytest.skip("holds a PostgreSQL table lock")
    simulator.config.ttft_ms = 60_000  # the request stays open until closed
    body = {"model": MODEL, "messages": ASK, "stream": True}
    refusal = refused("refuse_ticket", "INSERT", "chat_ticket", "user_id", alice.pk)
    with refusal, writes_held("chat_ticket") as release, ThreadPoolExecutor(1) as pool:
        asked = pool.submit(
            http.post, "/v1/chat/completions", headers=alice_key.headers, json=body
        )
        try:
            until_sync(lambda: simulator.log, "the model server was never asked")
        finally:
            release()
        response = asked.result()
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "not_stored"
    entry = until_sync(lambda: simulator.log[-1].ended and simulator.log[-1], "ended")
    assert entry.body["messages"] == ASK
    assert entry.disconnected and entry.tokens_sent == 0
    assert not Message.objects.exists()
