"""A question is stored or the user is told it was not, and in the browser it
goes back into the composer: never lost in between."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection
from playwright.sync_api import expect

from chat.models import Message
from chat.sockets.consumers import NOT_STORED
from tests.browser.chat_page import ask, open_conversation, wait_until_done
from tests.communicators import connect, frames_until, send

ROOT = Path(__file__).resolve().parents[2]
REFUSED = "a question the database refuses"


@pytest.fixture
def refused_question(transactional_db: None) -> Iterator[str]:
    """A real database refusal: a trigger fails the insert of a message with
    the text REFUSED (the question is never stored)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION refuse_question() RETURNS trigger AS $$ BEGIN"
                " IF NEW.content = %s THEN RAISE EXCEPTION 'refused by the test';"
                " END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
                [REFUSED],
            )
            cursor.execute(
                "CREATE TRIGGER refuse_question BEFORE INSERT ON chat_message"
                " FOR EACH ROW EXECUTE FUNCTION refuse_question()"
            )
        else:
            cursor.execute(
                "CREATE TRIGGER refuse_question BEFORE INSERT ON chat_message"
                f" WHEN NEW.content = '{REFUSED}'"
                " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
            )
    yield REFUSED
    with connection.cursor() as cursor:
        cursor.execute(
            "DROP TRIGGER refuse_question"
            + (" ON chat_message" if connection.vendor == "postgresql" else "")
        )
        if connection.vendor == "postgresql":
            cursor.execute("DROP FUNCTION refuse_question()")


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
    # The socket is still open and the conversation free: the next one goes.
    await send(communicator, "Hello again")
    stored = (await frames_until(communicator, "message"))[-1]["message"]
    assert stored["content"] == "Hello again"
    await frames_until(communicator, "done")
    assert await Message.objects.filter(role="user").acount() == 1
    await communicator.disconnect()


@pytest.mark.smoke
def test_concurrent_sends_on_the_sqlite_default_are_all_stored(tmp_path):
    """Sends to eight conversations at once, on the zero-config SQLite settings
    (a process of its own: the suite's database may be PostgreSQL)."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path}/site.sqlite3"}
    env.pop("REDIS_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "tests.concurrent_turns", "8", "10"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
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
