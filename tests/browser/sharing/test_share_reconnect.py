"""In Chromium: a live shared page that reconnects mid-answer gets the rest of
the answer once (its socket says how many messages the page shows now, not at
its first load)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chat.models import ShareLink
from tests.browser.chat_page import (
    WATCH_SOCKETS,
    ask,
    dom_words,
    numbered_paragraphs,
    open_conversation,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_shared_page_that_reconnects_mid_answer_shows_no_text_twice(
    live_server_url, browser, page, login, conversation, alice, simulator
):
    simulator.config.tps = 30
    simulator.config.think_tokens = 0
    simulator.config.answer_text = numbered_paragraphs(400)
    _, token = ShareLink.create_for(conversation, mode=ShareLink.Mode.LIVE)
    viewer_context = browser.new_context()  # signed out
    try:
        viewer = viewer_context.new_page()
        viewer.add_init_script(WATCH_SOCKETS)
        viewer.goto(f"{live_server_url}/s/{token}/")  # no messages yet: seen=0
        expect(viewer.locator("#chat")).to_have_attribute("data-connected", "1")

        open_conversation(page, login, live_server_url, conversation, alice)
        ask(page)
        answer = viewer.locator('article.assistant[data-status="streaming"] .answer')
        expect(answer).to_contain_text(re.compile(r"\bw10\b"), timeout=20_000)
        viewer.evaluate("window.__sockets.at(-1).close()")
        expect(viewer.locator("#chat")).not_to_have_attribute("data-connected", "1")
        expect(viewer.locator("#chat")).to_have_attribute("data-connected", "1")

        # Text keeps coming after the reconnect; none of it came twice.
        shown = dom_words(answer)
        later = f"w{int(shown[-1][1:]) + 30}"
        expect(answer).to_contain_text(re.compile(rf"\b{later}\b"), timeout=20_000)
        shown = dom_words(answer)
        assert len(shown) == len(set(shown)), shown
        assert "seen=2" in viewer.evaluate("window.__sockets.at(-1).url")
    finally:
        viewer_context.close()
    page.click("#stop-button")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()
