"""`chat.api.answers`: an API answer is begun like a socket's turn, its model
server asked before the commit (docs/latency.md, rules 8 and 9)."""

from __future__ import annotations

import json
import socket
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

import pytest

from chat.models import Message
from tests.api.conftest import ASK, MODEL, stored_answer
from tests.support.refusals import refused, writes_held
from tests.support.waiting import until_sync

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


def test_a_client_gone_before_the_commit_leaves_its_answer_stopped(
    live_server_url, alice_key, simulator, test_mode
):
    """The model server answers while the turn's commit waits (the tickets'
    writes are held); the client goes away, which stops the answer (its
    request to the model server closed); then the commit goes on: the answer
    is stored, stopped (not dropped as if its turn had never been stored, left
    streaming for the orphan sweep to mark interrupted)."""
    if test_mode == "sqlite":
        pytest.skip("holds a PostgreSQL table lock")
    simulator.config.tps = 20  # 20 s: far longer than the test
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 400
    body = json.dumps({"model": MODEL, "messages": ASK, "stream": False}).encode()
    address = urlparse(live_server_url)
    with writes_held("chat_ticket") as release:
        try:
            with socket.create_connection((address.hostname, address.port)) as client:
                client.sendall(
                    b"POST /v1/chat/completions HTTP/1.1\r\n"
                    b"Host: 127.0.0.1\r\n"
                    b"Authorization: Bearer " + alice_key.key.encode() + b"\r\n"
                    b"Content-Type: application/json\r\n"
                    b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
                )
                until_sync(
                    lambda: simulator.log and simulator.log[-1].tokens_sent > 0,
                    "the model server never started answering",
                )
            # Gone before the commit: the answer is stopped, its request closed.
            entry = until_sync(
                lambda: simulator.log[-1].ended and simulator.log[-1], "ended"
            )
            assert entry.disconnected and not entry.finished
            assert not Message.objects.exists()  # not committed yet
        finally:
            release()  # the commit goes on
    stored_answer(Message.Status.STOPPED)
