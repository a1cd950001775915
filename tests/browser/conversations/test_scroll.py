"""In Chromium: the view stays where the reader is when a long answer ends."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Message
from tests.browser.chat_page import ask, numbered_paragraphs, open_conversation

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


def test_opening_a_finished_answers_thoughts_does_not_move_the_view(
    live_server_url, page, login, conversation, alice, simulator
):
    # The view follows an answer while it is written and as it ends; after
    # that, opening its thoughts unfolds them where they are (the reader is
    # not taken to the answer's end), as on any other page.
    Message.objects.append_branch(
        [
            Message(conversation=conversation, role="user", content="Before"),
            Message(
                conversation=conversation,
                role="assistant",
                content="\n\n".join(f"Earlier paragraph {n}." for n in range(40)),
            ),
        ]
    )
    page.set_viewport_size({"width": 900, "height": 500})
    simulator.config.tps = 400
    simulator.config.think_tokens = 60
    simulator.config.answer_text = "A short answer."
    open_conversation(page, login, live_server_url, conversation, alice)
    page.evaluate("localStorage.setItem('chatsite.thinking', 'closed')")
    ask(page)
    done = page.locator('article.assistant[data-status="done"]').last
    expect(done.locator(".figures")).to_contain_text("tokens", timeout=30_000)
    page.wait_for_function(AT_BOTTOM, timeout=5_000)
    details = done.locator("details.thinking")
    expect(details).not_to_have_attribute("open", "")
    expect(details.locator("summary")).to_be_in_viewport()
    messages = page.locator("#messages")
    top = messages.evaluate("el => el.scrollTop")
    details.locator("summary").click()
    # Once the thoughts are laid out and a frame has run after that layout
    # (when the view would have been moved), the view is where it was.
    page.wait_for_function(
        """async () => {
          const boxes = document.querySelectorAll("article.assistant .thinking-scroll");
          const box = boxes[boxes.length - 1];
          if (!box || box.clientHeight === 0) return false;
          const frame = () => new Promise((ok) => requestAnimationFrame(ok));
          await frame();
          await frame();
          return true;
        }"""
    )
    assert messages.evaluate("el => el.scrollTop") == top


def test_the_jump_back_reaches_the_end_of_an_answer_written_out_of_view(
    live_server_url, page, login, conversation, alice, simulator
):
    # Scrolled up while an answer is written, its blocks are frozen out of view
    # and never laid out (their size a placeholder, static/chat/chat.css). After
    # it ends, the jump back lands on its end once they are laid out.
    page.set_viewport_size({"width": 900, "height": 500})
    simulator.config.tps = 400
    simulator.config.think_tokens = 0
    simulator.config.answer_text = numbered_paragraphs(1200, per_paragraph=8)
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    answer = page.locator('article.assistant[data-status="streaming"] .answer')
    expect(answer).to_contain_text("w40 ", timeout=15_000)
    page.locator("#messages").hover()
    page.mouse.wheel(0, -300)
    jump = page.locator("#jump-latest")
    expect(jump).to_be_visible()
    done = page.locator('article.assistant[data-status="done"]')
    expect(done).to_have_count(1, timeout=30_000)
    jump.click()
    page.wait_for_function(AT_BOTTOM, timeout=5_000)
    expect(jump).to_be_hidden()
