"""In Chromium: the view stays where the reader is when a long answer ends."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.chat_page import ask, open_conversation

pytestmark = pytest.mark.django_db(transaction=True)

AT_BOTTOM = """() => {
  const list = document.getElementById("messages");
  return list.scrollHeight > 2 * list.clientHeight
    && list.scrollHeight - list.scrollTop - list.clientHeight < 2;
}"""


@pytest.mark.parametrize(
    "text",
    [
        # One paragraph: the whole answer is the live tail until it ends.
        " ".join(f"w{i}" for i in range(900)),
        # Paragraphs: the last of them is the tail when it ends.
        "\n\n".join(" ".join(f"p{p}w{i}" for i in range(150)) for p in range(6)),
    ],
    ids=["one-block", "paragraphs"],
)
def test_the_view_stays_at_the_bottom_when_a_long_answer_ends(
    live_server_url, page, login, conversation, alice, simulator, text
):
    page.set_viewport_size({"width": 900, "height": 500})
    simulator.config.tps = 150
    simulator.config.think_tokens = 0
    simulator.config.answer_text = text
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    streaming = page.locator('article[data-status="streaming"] .answer')
    expect(streaming).to_contain_text("w40 ", timeout=15_000)
    page.wait_for_function(AT_BOTTOM)  # following the answer as it is written
    done = page.locator('article.assistant[data-status="done"]')
    expect(done).to_have_count(1, timeout=30_000)
    # The final text has moved out of the live tail into its block ...
    expect(done.locator(".answer .md-tail")).to_be_empty()
    expect(done.locator(".answer .md-block").last).to_contain_text(text[-20:])
    expect(done.locator(".figures")).to_contain_text("tokens")
    # ... and the reader is still at the end of it.
    page.wait_for_function(AT_BOTTOM, timeout=5_000)
