"""In Chromium: the page says each thing once and says it right (the model's
name after a change, one error, the end of thinking after a reload, "1 token")."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, Message, ModelProfile
from tests.browser.chat_page import (
    ask,
    numbered_paragraphs,
    open_conversation,
    open_settings,
    save,
)

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
    page.select_option("#id_model_profile", str(other.pk))
    save(page, 200)
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
