"""The browser says "loading model" while the model server loads the model."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Message
from tests.browser.chat_page import ask, open_conversation, wait_until_done

pytestmark = pytest.mark.django_db(transaction=True)


def test_opening_a_conversation_loads_the_model_and_says_so(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.load_ms = 3000
    open_conversation(page, login, live_server_url, conversation, alice)
    state = page.locator("#model-state")
    expect(state).to_be_visible()
    expect(state).to_have_text("Loading model…")
    # The question is asked while the model still loads: its answer says why
    # nothing comes yet, then streams once the model is ready.
    ask(page, "Are you awake?")
    expect(page.locator("article.assistant .live-figures")).to_have_text(
        "Loading model…"
    )
    wait_until_done(page)
    expect(state).to_be_hidden()
    assert len(simulator.loads) == 1, (
        "one preload for the opening and the typing together"
    )
    answer = Message.objects.get(role="assistant")
    assert answer.status == "done" and answer.load_ms is not None
