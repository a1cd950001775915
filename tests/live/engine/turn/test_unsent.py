"""A question is stored or the user is told it was not, and in the browser it
goes back into the composer: never lost in between."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chat.live.engine.turn.beginning import NOT_STORED
from chat.models import Message, Ticket
from tests.browser.chat_page import ask, open_conversation, wait_until_done
from tests.support.communicators import (
    WebsocketCommunicator,
    connect,
    frames_until,
    send,
)
from tests.support.refusals import refused, writes_held
from tests.support.waiting import idle, until

ROOT = Path(__file__).resolve().parents[4]
REFUSED = "a question the database refuses"


@pytest.fixture
def refused_question(transactional_db: None) -> Iterator[str]:
    """A real database refusal: a trigger fails the insert of a message with
    the text REFUSED (the question is never stored)."""
    with refused("refuse_question", "INSERT", "chat_message", "content", REFUSED):
        yield REFUSED


@pytest.mark.smoke
@pytest.mark.django_db(transaction=True)
async def test_a_question_the_database_refuses_is_an_error_not_a_closed_socket(
    alice, conversation, simulator, refused_question
):
    communicator = await connect(alice, conversation)
    await send(communicator, refused_question)
    refused = (await frames_until(communicator, "error"))[-1]
    assert refused["message_id"] is None and refused["code"] == "not_stored"
    assert not await conversation.messages.aexists()
    await the_next_question_goes(communicator)


async def the_next_question_goes(communicator: WebsocketCommunicator) -> None:
    """The socket is still open and the conversation free: the next question is
    stored and answered (the only question stored)."""
    await send(communicator, "Hello again")
    stored = (await frames_until(communicator, "message"))[-1]["message"]
    assert stored["content"] == "Hello again"
    await frames_until(communicator, "done")
    assert await Message.objects.filter(role="user").acount() == 1
    await communicator.disconnect()


# A question whose title the database refuses: its conversation's row is
# updated after the model server was asked (docs/latency.md, rule 8).
UNTITLED = "a title the database refuses"


@pytest.fixture
def refused_title(transactional_db: None) -> Iterator[str]:
    """A real database refusal after the answer was admitted: a trigger fails
    the update that gives a conversation the title UNTITLED, the last write of
    the turn's transaction (`Conversation._store_turn`)."""
    with refused("refuse_title", "UPDATE", "chat_conversation", "title", UNTITLED):
        yield UNTITLED


@pytest.fixture
def ticket_writes_held(
    test_mode: str, transactional_db: None
) -> Iterator[Callable[[], None]]:
    """A turn's ticket, written after its answer was admitted, waits until the
    function given is called, and so does its commit."""
    yield from _writes_held(test_mode, "chat_ticket")


@pytest.fixture
def message_writes_held(
    test_mode: str, transactional_db: None
) -> Iterator[Callable[[], None]]:
    """A turn's question, written after its answer was admitted (docs/latency.md,
    rule 8), waits until the function given is called."""
    yield from _writes_held(test_mode, "chat_message")


def _writes_held(test_mode: str, table: str) -> Iterator[Callable[[], None]]:
    if test_mode == "sqlite":
        pytest.skip("holds a PostgreSQL table lock")
    with writes_held(table) as release:
        yield release


@pytest.mark.django_db(transaction=True)
async def test_a_question_refused_after_the_model_was_asked_closes_the_request(
    alice, conversation, simulator, refused_question, message_writes_held
):
    """The model server is asked before the turn's rows are written and
    committed; the database refuses the question's row, the first: the request
    is closed (the model stops), nothing is stored or shown, and the page is
    told to give the text back, as when nothing was sent."""
    simulator.config.ttft_ms = 60_000  # the request stays open until closed
    communicator = await connect(alice, conversation)
    await send(communicator, refused_question)
    try:
        # The model server has the question while the turn is not stored.
        await until(lambda: simulator.log, "the model server was never asked")
    finally:
        message_writes_held()  # the turn's writes go on, and the first fails
    assert simulator.log[-1].body["messages"][-1]["content"] == refused_question
    seen = await frames_until(communicator, "error")
    assert [f["type"] for f in seen] == ["error"]
    assert seen[0]["message_id"] is None and seen[0]["code"] == "not_stored"
    assert seen[0]["detail"] == NOT_STORED
    assert seen[0]["content"] == refused_question
    await _closed_and_nothing_stored(simulator, conversation)
    await the_next_question_goes(communicator)


async def _closed_and_nothing_stored(simulator, conversation) -> None:
    """The turn's request was closed (the model server stops working on it),
    and none of its rows is left."""
    entry = await simulator.wait_for_end()
    assert entry.disconnected and entry.tokens_sent == 0
    assert not await Message.objects.aexists()
    assert not await Ticket.objects.aexists()
    await idle(conversation.pk)
    simulator.config.ttft_ms = 0


@pytest.mark.django_db(transaction=True)
async def test_a_turn_shown_before_its_commit_is_taken_back_when_the_commit_fails(
    alice, conversation, simulator, refused_title
):
    """A sent question is shown to every tab once its rows are written, before
    its ticket and the commit (docs/latency.md, rule 8). The turn's last write,
    the conversation's title, is refused: the request is closed, every tab has
    the turn taken back (its question and answer removed, the conversation
    untitled again), and the tab that sent it is told, with its text."""
    simulator.config.ttft_ms = 60_000  # the request stays open until closed
    communicator = await connect(alice, conversation)
    other = await connect(alice, conversation)  # another tab
    await send(communicator, refused_title)
    for tab in (communicator, other):
        seen = await frames_until(tab, "start")
        assert [f["type"] for f in seen] == ["message", "conversation", "start"]
        question = seen[0]["message"]
        assert question["content"] == refused_title
        assert seen[1]["title"] == refused_title
        taken_back = await frames_until(tab, "conversation")
        assert taken_back == [
            {"type": "removed", "message_ids": [question["id"], seen[2]["message_id"]]},
            {
                "type": "conversation",
                "id": conversation.pk,
                "title": "New conversation",
            },
        ]
    error = await communicator.receive_json_from()
    assert error["type"] == "error" and error["code"] == "not_stored"
    assert error["message_id"] is None and error["content"] == refused_title
    await _closed_and_nothing_stored(simulator, conversation)
    await conversation.arefresh_from_db()
    assert conversation.title == ""
    await the_next_question_goes(communicator)
    # The other tab was told nothing more of it: its next frame is the next
    # question.
    next_frame = await other.receive_json_from()
    assert next_frame["type"] == "message"
    assert next_frame["message"]["content"] == "Hello again"
    await other.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_sent_question_is_shown_before_its_commit(
    alice, conversation, simulator, ticket_writes_held
):
    """The question and the answer's start reach the page while the turn's
    ticket (written after its rows) and so its commit still wait; committed,
    the answer goes on as usual."""
    communicator = await connect(alice, conversation)
    await send(communicator, "Shown early")
    try:
        seen = await frames_until(communicator, "start")
        # Shown while the ticket's write waits: not committed yet.
        assert [f["type"] for f in seen] == ["message", "conversation", "start"]
    finally:
        ticket_writes_held()
    await frames_until(communicator, "done")
    stored = (await frames_until(communicator, "message"))[-1]["message"]
    assert stored["id"] == seen[2]["message_id"] and stored["status"] == "done"
    assert await Ticket.objects.acount() == 1
    await communicator.disconnect()


@pytest.fixture
def refused_second_ticket(test_mode: str, transactional_db: None) -> Iterator[int]:
    """The database refuses the site's second admission's ticket (the numbers
    start at 1 on the emptied test database): a regenerate's, after a first
    answer."""
    if test_mode == "sqlite":
        pytest.skip("holds a PostgreSQL table lock")
    with refused("refuse_ticket", "INSERT", "chat_ticket", "served", 2):
        yield 2


@pytest.mark.django_db(transaction=True)
async def test_a_regenerate_refused_after_the_model_was_asked_closes_the_request(
    alice, conversation, simulator, refused_second_ticket
):
    """A regenerate asks the model server before its commit too; the commit
    fails: the request is closed, and the turn it was to replace stays shown."""
    communicator = await connect(alice, conversation)
    await send(communicator, "Hello")
    await frames_until(communicator, "done")
    await frames_until(communicator, "message")  # the answer, saved
    simulator.config.ttft_ms = 60_000  # the request stays open until closed
    with writes_held("chat_ticket") as release:
        await communicator.send_json_to({"type": "regenerate"})
        try:
            await until(lambda: len(simulator.log) == 2, "the model was not asked")
        finally:
            release()  # the ticket's write goes on, and is refused
    seen = await frames_until(communicator, "error")
    assert [(f["type"], f["code"]) for f in seen] == [("error", "not_stored")]
    entry = await simulator.wait_for_end()
    assert entry.disconnected and entry.tokens_sent == 0
    kept = [m async for m in Message.objects.order_by("pk")]
    assert [(m.role, m.replaced) for m in kept] == [
        ("user", False),
        ("assistant", False),
    ]
    assert await Ticket.objects.acount() == 1
    await idle(conversation.pk)
    await communicator.disconnect()


@pytest.mark.smoke
def test_concurrent_sends_on_the_sqlite_default_are_all_stored(tmp_path):
    """Sends to eight conversations at once, on the zero-config SQLite settings
    (a process of its own: the suite's database may be PostgreSQL)."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path}/site.sqlite3"}
    env.pop("REDIS_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.concurrent_turns", "8", "10"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=240,  # below the suite's per-test timeout (pyproject.toml)
    )
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary == {"stored": 80, "errors": []}


# ---------------------------------------------------------------- in Chromium

# The next `send` frame is lost with its socket (as on a network drop).
DROP_NEXT_SEND = """
const nativeSend = WebSocket.prototype.send;
WebSocket.prototype.send = function (data) {
  if (window.__dropNextSend && JSON.parse(data).type === "send") {
    window.__dropNextSend = false;
    this.close();
    return;
  }
  return nativeSend.call(this, data);
};
"""


@pytest.mark.django_db(transaction=True)
def test_a_question_the_server_cannot_store_stays_in_the_composer(
    live_server_url, page, login, conversation, alice, simulator, refused_question
):
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page, refused_question)
    expect(page.locator("#alert")).to_have_text(NOT_STORED)
    expect(page.locator("#composer-input")).to_have_value(refused_question)
    expect(page.locator("#send-button")).to_be_visible()
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    assert not Message.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_question_refused_after_the_model_was_asked_stays_in_the_composer(
    live_server_url, page, login, conversation, alice, simulator, refused_title
):
    simulator.config.ttft_ms = 60_000
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page, refused_title)
    expect(page.locator("#alert")).to_have_text(NOT_STORED)
    expect(page.locator("#composer-input")).to_have_value(refused_title)
    expect(page.locator("#send-button")).to_be_visible()
    # The turn shown before its commit is taken back: no question, no answer
    # and the conversation untitled again.
    expect(page.locator("#chat article")).to_have_count(0)
    expect(page.locator("#conversation-title")).to_have_text("New conversation")
    assert not Message.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_question_lost_with_its_socket_comes_back_to_the_composer(
    live_server_url, page, login, conversation, alice, simulator
):
    page.add_init_script(DROP_NEXT_SEND)
    open_conversation(page, login, live_server_url, conversation, alice)
    page.evaluate("window.__dropNextSend = true")
    ask(page, "Is this kept?")
    expect(page.locator("#composer-input")).to_have_value("Is this kept?")
    expect(page.locator("#alert")).to_contain_text("it is back in the box")
    # Reconnected, it goes with one press.
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    page.press("#composer-input", "Enter")
    wait_until_done(page)
    expect(page.locator("#composer-input")).to_have_value("")
    assert list(
        Message.objects.filter(role="user").values_list("content", flat=True)
    ) == ["Is this kept?"]
