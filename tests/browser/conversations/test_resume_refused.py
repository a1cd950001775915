"""A resume the server refuses (`bad_offset`: the page claims more of the answer
than was written) sends nothing more for it; the page drops its copy and
resumes from the start, so the answer goes on live, whole and once."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chat.models import Message
from tests.browser.chat_page import (
    ask_until_checkpointed,
    dom_words,
    numbered_paragraphs,
    words,
)

pytestmark = pytest.mark.django_db(transaction=True)

# The page's first resume claims a million characters more than it has; the
# refusals it hears are kept.
CLAIM_TOO_MUCH = """
window.__refusals = [];
const nativeSend = WebSocket.prototype.send;
let claimed = false;
WebSocket.prototype.send = function (data) {
  const frame = JSON.parse(data);
  if (frame.type === "resume" && !claimed) {
    claimed = true;
    frame.offset += 1000000;
    data = JSON.stringify(frame);
  }
  return nativeSend.call(this, data);
};
const NativeWebSocket = window.WebSocket;
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (event) => {
      const frame = JSON.parse(event.data);
      if (frame.type === "error") window.__refusals.push(frame.code);
    });
  }
};
"""


def test_a_refused_resume_starts_the_answer_again_and_it_goes_on_live(
    live_server_url, page, login, alice, conversation, simulator
):
    # About ten seconds of text, a little thinking.
    config = simulator.config
    config.tps, config.think_tokens = 30, 5
    config.answer_text = numbered_paragraphs(300)
    checkpoint = ask_until_checkpointed(
        page, login, live_server_url, conversation, alice
    )
    page.add_init_script(CLAIM_TOO_MUCH)
    page.reload()
    page.wait_for_function("() => window.__refusals.length > 0")
    assert page.evaluate("window.__refusals") == ["bad_offset"]

    # Live again: words written after the refusal appear while it streams.
    later = len(words(checkpoint.content)) + 60
    streaming = page.locator('article.assistant[data-status="streaming"] .answer')
    expect(streaming).to_contain_text(re.compile(rf"\bw{later}\b"), timeout=15_000)
    done = page.locator('article.assistant[data-status="done"]')
    expect(done).to_have_count(1, timeout=30_000)
    answer = Message.objects.get(role="assistant")
    assert answer.status == "done"
    # Every word once, in order, and not rescued by the stored text at the end.
    assert dom_words(done.locator(".answer")) == words(answer.content)
    assert done.locator(".thinking-text").text_content() == answer.thinking
    assert done.get_attribute("data-resynced") is None
    assert page.evaluate("window.__refusals") == ["bad_offset"]
