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


# Counts the times the page stopped following the newest text (the jump button
# is shown then).
COUNT_LOST_FOLLOWING = """() => {
  window.__stoppedFollowing = 0;
  const jump = document.getElementById("jump-latest");
  new MutationObserver(() => { if (!jump.hidden) window.__stoppedFollowing++; })
    .observe(jump, { attributes: true });
}"""


def test_the_view_keeps_following_lists_that_arrive_many_items_a_frame(
    live_server_url, page, login, conversation, alice, simulator
):
    # A fast model (or a backlog drawn at once) joins several items to a frozen
    # list and freezes the next block in one frame: the list, no longer the
    # newest block, counts at its old height until the frame's layout settles
    # it (static/chat/chat.css). Scrolled to the end before that, the view
    # stopped short and stopped following by itself; it scrolls after layout
    # (static/chat/live_answer.js, `follower`).
    page.set_viewport_size({"width": 900, "height": 500})
    simulator.config.tps = 2000
    simulator.config.think_tokens = 0
    simulator.config.answer_text = "\n\n".join(
        f"Paragraph {p}, a line of words before the list.\n\n"
        + "\n".join(f"- item {p}.{i}" for i in range(6))
        for p in range(40)
    )
    open_conversation(page, login, live_server_url, conversation, alice)
    page.evaluate(COUNT_LOST_FOLLOWING)
    ask(page)
    done = page.locator('article.assistant[data-status="done"]')
    expect(done).to_have_count(1, timeout=30_000)
    page.wait_for_function(AT_BOTTOM, timeout=5_000)
    assert page.evaluate("window.__stoppedFollowing") == 0
    expect(page.locator("#jump-latest")).to_be_hidden()
