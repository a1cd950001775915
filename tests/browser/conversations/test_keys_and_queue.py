"""Everyday touches in Chromium: Esc stops an answer, a message typed while an
answer streams is queued and sent when it ends, ↑ edits the last question, the
shortcuts (Ctrl+/, Ctrl+Shift+O) and the skip link."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, Message
from tests.browser import axe
from tests.browser.chat_page import ask, open_conversation, wait_until_done

pytestmark = pytest.mark.django_db(transaction=True)


def pace(simulator, tps, answer_tokens):
    """Answers without thinking, `answer_tokens` long at `tps`."""
    simulator.config.tps = tps
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = answer_tokens
    return simulator


@pytest.fixture
def slow(simulator):
    return pace(simulator, 20, 400)


@pytest.fixture
def conversation(alice, demo_profile):
    return Conversation.objects.create(owner=alice, model_profile=demo_profile)


def streaming(page):
    expect(page.locator(".answer.streaming")).not_to_have_text("", timeout=15_000)


# The frames the page sends over its socket.
RECORD_SENT = """
window.__sent = [];
const nativeSend = WebSocket.prototype.send;
WebSocket.prototype.send = function (data) {
  window.__sent.push(JSON.parse(data).type);
  return nativeSend.call(this, data);
};
"""


def test_esc_stops_the_answer(live_server_url, page, login, alice, conversation, slow):
    page.add_init_script(RECORD_SENT)
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page, "Write a long essay")
    streaming(page)
    # Esc in a dialog closes the dialog only.
    page.keyboard.press("Control+/")
    expect(page.locator("#shortcuts-dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#shortcuts-dialog")).to_be_hidden()
    assert "stop" not in page.evaluate("window.__sent")
    page.press("#composer-input", "Escape")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()
    assert page.evaluate("window.__sent").count("stop") == 1
    expect(page.locator("#stop-button")).to_be_hidden()
    assert Message.objects.get(role="assistant").status == "stopped"


def queue_behind(page, first, then):
    """Ask `first`, then, while its answer streams, `then` (queued)."""
    ask(page, first)
    streaming(page)
    ask(page, then)


def test_a_message_typed_while_the_answer_streams_is_sent_when_it_ends(
    live_server_url, page, login, alice, conversation, simulator
):
    pace(simulator, 30, 60)
    open_conversation(page, login, live_server_url, conversation, alice)
    queue_behind(page, "First", "Second")
    card = page.locator("#queued-card")
    expect(card).to_be_visible()
    expect(card.locator(".queued-text")).to_have_text("Second")
    expect(page.locator("#composer-input")).to_have_value("")
    wait_until_done(page, count=2)
    expect(page.locator("article.user")).to_have_text(["First", "Second"])
    expect(card).to_be_hidden()
    asked = [e.body["messages"][-1]["content"] for e in simulator.asked]
    assert asked == ["First", "Second"]


def test_after_a_stop_the_queued_message_is_back_in_the_box(
    live_server_url, page, login, alice, conversation, slow
):
    open_conversation(page, login, live_server_url, conversation, alice)
    queue_behind(page, "Write a long essay", "Then this")
    expect(page.locator("#queued-card")).to_be_visible()
    # The card, shown while the answer streams, passes axe in both themes (the
    # tour, bench/tour.py, has no streaming answer to show it on).
    for theme in ("light", "dark"):
        page.evaluate(f"document.documentElement.dataset.theme = {theme!r}")
        # The buttons' colour transitions end before axe reads the colours.
        page.evaluate("Promise.all(document.getAnimations().map((a) => a.finished))")
        found = axe.violations(page)
        assert not found, axe.describe(f"queued card, {theme}", found)
    page.click("#stop-button")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()
    expect(page.locator("#composer-input")).to_have_value("Then this")
    expect(page.locator("#queued-card")).to_be_hidden()
    assert Message.objects.filter(role="user").count() == 1


def test_a_queued_message_can_be_edited_or_cancelled(
    live_server_url, page, login, alice, conversation, slow
):
    open_conversation(page, login, live_server_url, conversation, alice)
    queue_behind(page, "Write a long essay", "Queued text")
    page.click("#queued-card .queued-edit")
    expect(page.locator("#queued-card")).to_be_hidden()
    expect(page.locator("#composer-input")).to_have_value("Queued text")
    expect(page.locator("#composer-input")).to_be_focused()
    page.press("#composer-input", "Enter")  # queued again
    expect(page.locator("#queued-card .queued-text")).to_have_text("Queued text")
    page.click("#queued-card .queued-cancel")
    expect(page.locator("#queued-card")).to_be_hidden()
    page.click("#stop-button")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()
    expect(page.locator("#composer-input")).to_have_value("")
    assert Message.objects.filter(role="user").count() == 1


def test_up_in_the_empty_box_edits_the_last_question(
    live_server_url, page, login, alice, conversation, simulator
):
    simulator.config.answer_tokens = 5
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page, "Fix me")
    wait_until_done(page)
    page.fill("#composer-input", "typed")
    page.press("#composer-input", "ArrowUp")  # not in a box with text
    expect(page.locator(".edit-form")).to_have_count(0)
    page.fill("#composer-input", "")
    page.press("#composer-input", "ArrowUp")
    field = page.locator("article.user .edit-form textarea")
    expect(field).to_be_focused()
    expect(field).to_have_value("Fix me")


def test_shortcuts_dialog_new_conversation_and_skip_link(
    live_server_url, page, login, alice, conversation, simulator
):
    conversation.messages.create(role=Message.Role.USER, content="Kept")
    open_conversation(page, login, live_server_url, conversation, alice)
    first = page.evaluate(
        """() => [...document.querySelectorAll('a[href], button, input, textarea')]
          .find((el) => !el.closest('[hidden], dialog, template')).className"""
    )
    assert first == "skip-link"  # the first stop of the tab order
    page.locator(".skip-link").focus()
    expect(page.locator(".skip-link")).to_be_visible()
    page.keyboard.press("Enter")
    expect(page.locator("#composer-input")).to_be_focused()

    page.keyboard.press("Control+/")
    dialog = page.locator("#shortcuts-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Stop the answer")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    page.keyboard.press("Control+Shift+O")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    expect(page.locator("#chat")).not_to_have_attribute(
        "data-conversation-id", str(conversation.pk)
    )
    assert Conversation.objects.count() == 2
