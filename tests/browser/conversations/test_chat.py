"""The whole path in headless Chromium: sign in, send, watch it stream, stop."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, Message
from tests.browser.chat_page import (
    RICH_ANSWER,
    WATCH_SOCKETS,
    ask,
    ask_from_home,
    ask_until_checkpointed,
    assert_rich_answer,
    dom_words,
    numbered_paragraphs,
    open_conversation,
    wait_until_done,
    words,
)
from tests.support.waiting import until_sync

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
    # The home page is the composer: Enter starts the conversation and sends.
    ask_from_home(page, "Tell me about streams")
    expect(page.locator(".chat-header .badge")).to_have_text("demo")

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


def test_the_home_question_is_sent_once_even_after_a_reload(
    live_server_url, page, login, alice, demo_profile, simulator
):
    login(page, alice)
    page.goto(live_server_url + "/")
    ask_from_home(page, "Only once")
    wait_until_done(page)
    expect(page.locator("#composer-input")).to_have_value("")
    page.reload()
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    expect(page.locator("article.user")).to_have_count(1)
    expect(page.locator("#composer-input")).to_have_value("")
    assert Message.objects.filter(role="user").count() == 1
    assert [e.body["messages"][-1]["content"] for e in simulator.asked] == ["Only once"]


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
    entry = simulator.asked[-1]
    assert entry.disconnected


def test_reload_mid_answer_resumes_without_losing_or_doubling_text(
    live_server_url, page, login, alice, demo_profile, simulator
):
    simulator.config.tps = 30
    simulator.config.think_tokens = 5
    simulator.config.answer_text = numbered_paragraphs(90)
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    # A checkpoint has landed, so the reloaded page starts from stored text.
    ask_until_checkpointed(page, login, live_server_url, conversation, alice)
    page.add_init_script(CAPTURE_CHECKPOINT)
    page.reload()
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    done = page.locator('article.assistant[data-status="done"]')
    expect(done).to_have_count(1, timeout=20_000)
    answer = Message.objects.get(role="assistant")
    assert answer.status == "done"
    assert page.evaluate("window.__checkpointed"), "the reloaded page showed no text"
    # Every word once, in order: nothing lost, nothing doubled.
    assert dom_words(done.locator(".answer")) == words(answer.content)
    assert done.locator(".thinking-text").text_content() == answer.thinking
    # ... and the page never had to fall back to the stored text to get there.
    assert done.get_attribute("data-resynced") is None


# The streaming answer's text as the reloaded page first shows it.
CAPTURE_CHECKPOINT = """
document.addEventListener("DOMContentLoaded", () => {
  const article = document.querySelector('article[data-status="streaming"]');
  window.__checkpointed = article ? article.querySelector(".answer").textContent : "";
});
"""


def test_the_thinking_toggle_changes_what_the_model_is_asked(
    live_server_url, page, login, conversation, alice, simulator
):
    open_conversation(page, login, live_server_url, conversation, alice)
    for mode, think in (("off", False), ("on", True)):
        with page.expect_response(lambda r: r.url.endswith("/thinking/")) as saved:
            page.select_option("#thinking-mode", mode)
        assert saved.value.ok
        ask(page, f"Thinking {mode}")
        wait_until_done(page, 1 if mode == "off" else 2)
        assert simulator.asked[-1].body["think"] is think
    thoughts = page.locator("article.assistant details.thinking")
    expect(thoughts.nth(0)).to_be_hidden()  # no thinking was asked for
    expect(thoughts.nth(1)).to_be_attached()


def test_thinking_is_live_then_folds_away_unless_kept_open(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.tps = 40
    simulator.config.think_tokens = 60
    simulator.config.answer_tokens = 30
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    thinking = page.locator('article[data-status="streaming"] details.thinking')
    # Live: open, its text growing, a running counter while no answer is out.
    expect(thinking).to_have_attribute("open", "", timeout=10_000)
    expect(thinking.locator(".thinking-text")).not_to_have_text("")
    expect(thinking.locator("summary")).to_contain_text("Thinking…")
    assert page.locator('article[data-status="streaming"] .answer').inner_text() == ""
    # The answer starts: the thoughts fold away by themselves.
    expect(thinking).not_to_have_attribute("open", "", timeout=10_000)
    wait_until_done(page)
    summary = page.locator("article.assistant details.thinking summary")
    expect(summary).to_have_text(re.compile(r"^Thought for \d+(\.\d)? s$"))
    answer = Message.objects.get(role="assistant")
    assert (
        answer.thinking_ms
        and f"{answer.thinking_ms / 1000:.1f}" in summary.inner_text()
    )

    # Opening them while the next answer streams keeps them open, now and later.
    ask(page, "Again")
    thinking = page.locator('article[data-status="streaming"] details.thinking')
    expect(thinking).to_have_attribute("open", "", timeout=10_000)
    thinking.locator("summary").click()  # closed by the reader ...
    thinking.locator("summary").click()  # ... and opened again: keep it open
    assert page.evaluate("localStorage.getItem('chatsite.thinking')") == "open"
    wait_until_done(page, 2)
    expect(page.locator("article.assistant details.thinking").nth(1)).to_have_attribute(
        "open", ""
    )


def test_text_shows_up_token_by_token_with_live_figures(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.tps = 20
    simulator.config.think_tokens = 0
    simulator.config.answer_text = numbered_paragraphs(60)
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    streaming = page.locator('article[data-status="streaming"]')
    expect(streaming.locator(".answer")).to_contain_text("w3", timeout=10_000)
    shown = words(streaming.locator(".answer").inner_text())
    assert 0 < len(shown) < 60  # on screen long before the end
    figures = streaming.locator(".live-figures")
    expect(figures).to_contain_text("tok/s")
    expect(figures).to_contain_text("first token")
    wait_until_done(page)
    done = page.locator('article.assistant[data-status="done"]')
    expect(done.locator(".live-figures")).to_have_count(0)
    expect(done.locator(".figures")).to_contain_text("tok/s")
    expect(done).not_to_have_attribute("aria-busy", "true")


def test_stop_button_stops_and_enter_sends_shift_enter_breaks(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.tps = 20
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 400
    open_conversation(page, login, live_server_url, conversation, alice)
    page.fill("#composer-input", "line one")
    page.press("#composer-input", "Shift+Enter")
    page.keyboard.type("line two")
    assert page.input_value("#composer-input") == "line one\nline two"
    page.press("#composer-input", "Enter")
    expect(page.locator("article.user")).to_have_count(1)
    # The question is shown before its commit (docs/latency.md, rule 8): wait
    # for the stored row, not for the article.
    until_sync(
        lambda: Message.objects.filter(role="user").exists(),
        "the question was not stored",
    )
    assert Message.objects.get(role="user").content == "line one\nline two"
    expect(page.locator("#send-button")).to_be_hidden()
    expect(page.locator(".answer.streaming")).not_to_have_text("", timeout=15_000)
    page.click("#stop-button")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()
    expect(page.locator("#send-button")).to_be_visible()
    # The model server hears of the stop when its next write fails.
    until_sync(lambda: simulator.asked[-1].disconnected, "the model never saw the stop")


def test_scrolling_up_pauses_following_and_offers_a_jump_back(
    live_server_url, browser, login, conversation, alice, simulator
):
    simulator.config.tps = 60
    simulator.config.think_tokens = 0
    simulator.config.answer_text = numbered_paragraphs(240, per_paragraph=6)
    page = browser.new_context(viewport={"width": 900, "height": 500}).new_page()
    open_conversation(page, login, live_server_url, conversation, alice)
    messages = page.locator("#messages")
    gap = "el => el.scrollHeight - el.scrollTop - el.clientHeight"
    ask(page)
    page.wait_for_function(
        "() => { const m = document.getElementById('messages');"
        " return m.scrollHeight > m.clientHeight + 300; }"
    )
    # Following the newest text: the frame after a token scrolls to it (wait
    # for that scroll, not for the token: under load the two are apart).
    page.wait_for_function(f"() => ({gap})(document.getElementById('messages')) < 5")
    assert streaming_now(page)
    jump = page.locator("#jump-latest")
    expect(jump).to_be_hidden()
    messages.hover()
    page.mouse.wheel(0, -400)
    expect(jump).to_be_visible()
    top = messages.evaluate("el => el.scrollTop")
    page.wait_for_timeout(500)  # more text arrives meanwhile: the view stays put
    assert streaming_now(page)
    assert messages.evaluate("el => el.scrollTop") == top
    jump.click()
    expect(jump).to_be_hidden()
    # Back at the newest text, and following it again (the frame after the
    # click scrolls: wait for that, not for a fixed time).
    page.wait_for_function(
        "() => { const m = document.getElementById('messages');"
        " return m.scrollHeight - m.scrollTop - m.clientHeight < 5; }",
        timeout=10_000,
    )
    page.context.close()


def streaming_now(page):
    return page.locator('article[data-status="streaming"]').count() == 1


def test_a_dropped_socket_shows_reconnecting_and_resumes_exactly(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.tps = 30
    simulator.config.think_tokens = 0
    simulator.config.answer_text = numbered_paragraphs(100)
    page.add_init_script(WATCH_SOCKETS)
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    expect(page.locator(".answer.streaming")).to_contain_text("w5", timeout=10_000)
    page.evaluate("window.__sockets.at(-1).close()")
    # The page may reconnect faster than a locator polls: wait for the new
    # socket, and read the states the badge went through from its observer.
    page.wait_for_function(
        "() => window.__sockets.length === 2 && window.__sockets[1].readyState === 1"
    )
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    assert "reconnecting" in page.evaluate("window.__connection")
    wait_until_done(page)
    answer = Message.objects.get(role="assistant")
    done = page.locator('article.assistant[data-status="done"]')
    assert dom_words(done.locator(".answer")) == words(answer.content)
    assert done.get_attribute("data-resynced") is None


# Every text the screen reader region was given.
WATCH_ANNOUNCEMENTS = """
window.__announced = [];
document.addEventListener("DOMContentLoaded", () => {
  const region = document.getElementById("announcer");
  const record = () => region.textContent && __announced.push(region.textContent);
  new MutationObserver(record)
    .observe(region, { childList: true, characterData: true, subtree: true });
});
"""


def test_a_finished_answer_is_announced_once(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.tps = 60
    simulator.config.think_tokens = 5
    simulator.config.answer_text = numbered_paragraphs(40)
    page.add_init_script(WATCH_ANNOUNCEMENTS)
    open_conversation(page, login, live_server_url, conversation, alice)
    assert page.locator("#messages").get_attribute("aria-live") is None
    ask(page)
    wait_until_done(page)
    page.wait_for_timeout(200)
    announced = page.evaluate("window.__announced")
    assert len(announced) == 1 and announced[0].startswith("Answer: w0 w1")
    expect(page.locator("#announcer")).to_have_attribute("aria-live", "polite")


# Content-Security-Policy violations, as the page reports them.
RECORD_CSP_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


def test_pages_work_under_the_content_security_policy(
    live_server_url, page, login, conversation, alice, simulator
):
    page.add_init_script(RECORD_CSP_VIOLATIONS)
    simulator.config.tps = 200
    simulator.config.think_tokens = 5
    simulator.config.answer_text = RICH_ANSWER
    login(page, alice)
    response = page.goto(live_server_url + conversation.get_absolute_url())
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    # htmx works: the thinking toggle posts and swaps its partial in.
    with page.expect_response(lambda r: r.url.endswith("/thinking/")) as saved:
        page.select_option("#thinking-mode", "on")
    assert saved.value.ok
    ask(page)
    wait_until_done(page)
    assert_rich_answer(page.locator('article.assistant[data-status="done"] .answer'))
    assert page.evaluate("window.__cspViolations") == []
    page.reload()
    wait_until_done(page)
    page.wait_for_timeout(300)  # the enhancement of server-rendered answers
    assert_rich_answer(page.locator('article.assistant[data-status="done"] .answer'))
    assert page.evaluate("window.__cspViolations") == []
    page.goto(live_server_url + "/")
    expect(page.locator("#sidebar")).to_be_visible()
    assert page.evaluate("window.__cspViolations") == []
