"""The whole path in headless Chromium: sign in, send, watch it stream, stop."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, Message

pytestmark = pytest.mark.django_db(transaction=True)


def test_sign_in_send_and_watch_the_answer_stream(
    live_server_url, page, alice, demo_profile, simulator
):
    simulator.config.tps = 25
    simulator.config.think_tokens = 10
    simulator.config.answer_tokens = 60
    page.goto(live_server_url + "/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "password-alice-123")
    page.click("button[type=submit]")
    page.click("text=Start a conversation")
    expect(page.locator(".badge")).to_have_text("demo")
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")

    page.fill("#composer-input", "Tell me about streams")
    page.press("#composer-input", "Enter")

    streaming = page.locator('article.assistant[data-status="streaming"] .answer')
    # Text is on screen while the answer is still being written.
    expect(streaming).not_to_have_text("", timeout=15_000)
    assert page.locator('article.assistant[data-status="streaming"]').count() == 1
    expect(page.locator("article.user")).to_have_text("Tell me about streams")
    expect(page.locator('article.assistant[data-status="done"]')).to_have_count(
        1, timeout=20_000
    )
    answer = Message.objects.get(role="assistant")
    assert answer.status == "done" and answer.thinking
    shown = page.locator('article.assistant[data-status="done"] .answer').inner_text()
    assert answer.content.split()[0] in shown
    expect(page.locator("details.thinking summary")).to_contain_text("Thought for")
    assert Conversation.objects.get().title == "Tell me about streams"


def test_stop_keeps_the_partial_answer(
    live_server_url, page, login, alice, demo_profile, simulator
):
    simulator.config.tps = 20
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 400
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    login(page, alice)
    page.goto(live_server_url + conversation.get_absolute_url())
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    page.fill("#composer-input", "Write a long essay")
    page.click("#send-button")
    expect(page.locator(".answer.streaming")).not_to_have_text("", timeout=15_000)
    page.click("#stop-button")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()
    expect(page.locator(".message-footer .status")).to_have_text("Stopped.")
    expect(page.locator("#stop-button")).to_be_hidden()
    answer = Message.objects.get(role="assistant")
    assert answer.status == "stopped"
    assert answer.content
    entry = simulator.log[-1]
    assert entry.disconnected


def test_reload_mid_answer_resumes_without_losing_or_doubling_text(
    live_server_url, page, login, alice, demo_profile, simulator
):
    simulator.config.tps = 30
    simulator.config.think_tokens = 5
    simulator.config.answer_tokens = 90
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    login(page, alice)
    page.goto(live_server_url + conversation.get_absolute_url())
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    page.fill("#composer-input", "Count slowly")
    page.press("#composer-input", "Enter")
    expect(page.locator(".answer.streaming")).not_to_have_text("", timeout=15_000)
    page.wait_for_timeout(1300)  # let a checkpoint land, so the reload shows text
    page.add_init_script(CAPTURE_STREAMED_TEXT)
    page.reload()
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    done = page.locator('article.assistant[data-status="done"] .answer')
    expect(done).to_have_count(1, timeout=20_000)
    answer = Message.objects.get(role="assistant")
    assert answer.status == "done"
    streamed = page.evaluate("window.__streamed")
    assert streamed["checkpointed"], "the reloaded page showed no text"
    assert streamed["answer"] == answer.content
    assert streamed["thinking"] == answer.thinking


# Records the streaming article's text at the moment the final message replaces it.
CAPTURE_STREAMED_TEXT = """
document.addEventListener("DOMContentLoaded", () => {
  const list = document.getElementById("messages");
  const article = list.querySelector('article[data-status="streaming"]');
  const checkpointed = article ? article.querySelector(".answer").textContent : "";
  new MutationObserver((records) => {
    for (const record of records) for (const node of record.removedNodes) {
      if (node.dataset && node.dataset.status === "streaming") {
        window.__streamed = {
          checkpointed,
          answer: node.querySelector(".answer").textContent,
          thinking: node.querySelector(".thinking-text").textContent,
        };
      }
    }
  }).observe(list, { childList: true });
});
"""
