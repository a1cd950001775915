"""In Chromium: scrolling up a long conversation brings its older messages in
above, without moving what the reader is looking at."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, Message
from chat.models.paging import page_size

pytestmark = pytest.mark.django_db(transaction=True)

ANCHOR_TOP = """() => {
  const list = document.getElementById("messages");
  const anchor = document.querySelector("article[data-message-id]");
  window.__anchor = anchor;
  list.scrollTop = 0;  // up to the top of what the page shows
  return anchor.getBoundingClientRect().top - list.getBoundingClientRect().top;
}"""
TOP_NOW = """() => {
  const list = document.getElementById("messages");
  return window.__anchor.getBoundingClientRect().top - list.getBoundingClientRect().top;
}"""


def test_scrolling_up_inserts_older_messages_above_without_a_jump(
    live_server_url, page, login, alice, demo_profile
):
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    count = 3 * page_size()
    Message.objects.append_branch(
        [
            Message(
                conversation=conversation,
                role="assistant" if n % 2 else "user",
                content=f"m{n}\n\nA second paragraph.\n\n- and\n- a list",
                model_tag="qwen3-demo:8b",
            )
            for n in range(count)
        ]
    )
    ids = list(conversation.messages.values_list("pk", flat=True))
    login(page, alice)
    page.goto(live_server_url + conversation.get_absolute_url())
    articles = page.locator("#messages article[data-message-id]")
    expect(articles).to_have_count(page_size())
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")

    before = page.evaluate(ANCHOR_TOP)
    # The top came into view: the page before is fetched and inserted above.
    expect(articles).to_have_count(2 * page_size())
    assert page.evaluate(TOP_NOW) == pytest.approx(before, abs=2)
    shown = [
        int(n) for n in articles.evaluate_all("a => a.map(e => e.dataset.messageId)")
    ]
    assert shown == ids[-2 * page_size() :]

    # The control works from the keyboard too, up to the first message.
    page.focus("#older-messages .load-older")
    page.keyboard.press("Enter")
    expect(articles).to_have_count(count)
    expect(page.locator("#older-messages")).to_have_count(0)
    shown = [
        int(n) for n in articles.evaluate_all("a => a.map(e => e.dataset.messageId)")
    ]
    assert shown == ids
    expect(page.locator("#announcer")).to_contain_text("from the first")
