"""In Chromium: the page says each thing once and says it right (the model's
name after a change, one error, the end of thinking after a reload, "1 token")."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, Message, ModelProfile
from tests.browser.chat_page import (
    ask,
    choose_model,
    numbered_paragraphs,
    open_conversation,
    open_settings,
)
from tests.support.waiting import until_sync

pytestmark = pytest.mark.django_db(transaction=True)


def test_after_a_model_change_the_composer_and_the_hint_name_the_new_model(
    live_server_url, page, login, alice, conversation, simulator
):
    other = ModelProfile.objects.create(
        tag="llama-demo:3b", base_url=simulator.url, context_length=8192
    )
    open_settings(page, login, live_server_url, conversation, alice)
    composer = page.locator("#composer-input")
    hint = page.locator("#empty-hint")
    expect(composer).to_have_attribute(
        "placeholder", "Message qwen3-demo:8b (demo model)"
    )
    expect(hint).to_contain_text("as qwen3-demo:8b (demo model) writes it")
    choose_model(page, other)
    expect(page.locator("#model-label .model-name")).to_have_text("llama-demo:3b")
    expect(composer).to_have_attribute("placeholder", "Message llama-demo:3b")
    expect(hint).to_contain_text("as llama-demo:3b writes it")


def test_an_answer_that_fails_shows_its_error_once(
    live_server_url, page, login, alice, simulator
):
    unreachable = ModelProfile.objects.create(
        tag="gone:1b", base_url="http://127.0.0.1:9", backend="openai"
    )
    conversation = Conversation.objects.create(owner=alice, model_profile=unreachable)
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page, "Anyone there?")
    failed = page.locator('article.assistant[data-status="error"]')
    expect(failed).to_have_count(1, timeout=20_000)
    detail = Message.objects.get(role="assistant").error_detail
    assert "did not answer" in detail
    expect(failed.locator(".status")).to_have_text(detail)
    # Once, under the answer; not again in the banner (the announcer, for
    # screen readers, says it once too).
    shown = page.locator("#messages, #alert").get_by_text(detail).filter(visible=True)
    expect(shown).to_have_count(1)
    expect(page.locator("#alert")).to_be_hidden()


def test_a_page_reloaded_mid_answer_knows_the_thinking_ended(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.tps = 15
    simulator.config.think_tokens = 5
    simulator.config.answer_text = numbered_paragraphs(600)
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    streaming = page.locator('article.assistant[data-status="streaming"]')
    expect(streaming.locator(".answer")).to_contain_text("w2", timeout=15_000)
    page.reload()
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    # Still being written, and its thoughts are over.
    expect(streaming.locator(".answer")).to_contain_text("w20", timeout=15_000)
    expect(streaming.locator(".thinking-label")).to_have_text("Thoughts")
    page.click("#stop-button")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()


def test_after_a_reload_the_count_estimates_the_checkpointed_text(
    live_server_url, page, login, conversation, alice, simulator
):
    """The page is served the answer's checkpoint as text, not as tokens: the
    count adds an estimate of it and says so (≈)."""
    simulator.config.tps = 15
    simulator.config.think_tokens = 0
    simulator.config.answer_text = numbered_paragraphs(600)
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    # Wait for the work: a checkpoint holding some of the answer.
    until_sync(
        lambda: Message.objects.filter(
            role="assistant", content__contains="w5"
        ).exists(),
        "a checkpoint of the answer",
    )
    page.reload()
    streaming = page.locator('article.assistant[data-status="streaming"]')
    figures = streaming.locator(".live-figures")
    expect(figures).to_contain_text(re.compile(r"≈ \d+ tokens so far"), timeout=15_000)
    page.click("#stop-button")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()


def test_one_token_is_one_token(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.tps = 0.1  # the second word is ten seconds behind the first
    simulator.config.think_tokens = 0
    simulator.config.answer_text = "One two"
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    figures = page.locator('article.assistant[data-status="streaming"] .live-figures')
    expect(figures).to_contain_text("1 token so far", timeout=15_000)
    page.click("#stop-button")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()
    # The stored figures, as the server renders them.
    answer = Message.objects.get(role="assistant")
    answer.output_tokens = 1
    answer.history_total = 1
    answer.save()
    page.reload()
    shown = page.locator("article.assistant .figures")
    expect(shown).to_contain_text(re.compile(r"· 1 token\b(?!s)"))
    expect(shown).to_contain_text(re.compile(r"1 of 1 message\b(?!s)"))


# Read in one task, so the count and the text are seen as the same frame drew them.
COUNT_AND_WORDS = """() => {
  const article = document.querySelector('article.assistant[data-status="streaming"]');
  if (!article) return null;
  const figures = article.querySelector(".live-figures").textContent;
  const count = figures.match(/(\\d+) tokens? so far/);
  const text = article.querySelector(".answer").textContent;
  const words = text.split(/\\s+/).filter(Boolean);
  return [count ? Number(count[1]) : null, words.length];
}"""


@pytest.mark.parametrize("burst", [1, 3])
def test_the_live_count_is_the_tokens_on_the_page(
    live_server_url, page, login, conversation, alice, simulator, burst
):
    """Each word is one token: at any moment the count says how many are shown
    (not how many arrived a quarter of a second ago), also when several come in
    one network read and the server sends them as one frame."""
    simulator.config.tps = 40
    simulator.config.burst = burst
    simulator.config.think_tokens = 0
    # 15 s of answer, stopped after w70: with 120 words (3 s) a loaded machine
    # took the snapshots and the click after the answer had ended.
    simulator.config.answer_text = " ".join(f"w{n}" for n in range(600))
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    streaming = page.locator('article.assistant[data-status="streaming"]')
    snapshots = []
    for word in ("w10", "w30", "w50", "w70"):
        expect(streaming.locator(".answer")).to_contain_text(word, timeout=15_000)
        snapshots.append(page.evaluate(COUNT_AND_WORDS))
    page.click("#stop-button")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()
    assert all(s is not None and s[0] == s[1] for s in snapshots), snapshots
    assert snapshots[-1][1] > snapshots[0][1]
