"""A user over quota, in Chromium: the quiet line near the composer says so, a
sent question is refused with when the quota resets, and the text comes back to
the composer; the model is never asked."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Message, SiteDefaults
from tests.browser.chat_page import ask, open_conversation, wait_until_done

pytestmark = pytest.mark.django_db(transaction=True)

REACHED = "Your quota is reached (1 of 1 answers); it resets at 00:00 UTC."


def test_over_quota_the_question_is_refused_and_given_back(
    live_server_url, page, login, alice, conversation, simulator
):
    site = SiteDefaults.load()
    site.user_answers = 1
    site.save()
    conversation.messages.create(role=Message.Role.USER, content="first")
    conversation.messages.create(role=Message.Role.ASSISTANT, content="first answer")

    open_conversation(page, login, live_server_url, conversation, alice)
    expect(page.locator("#quota-line")).to_have_text(REACHED)
    ask(page, "One more question")
    expect(page.locator("#alert")).to_have_text(REACHED)
    expect(page.locator("#composer-input")).to_have_value("One more question")
    expect(page.locator("#send-button")).to_be_visible()
    assert conversation.messages.count() == 2
    assert not simulator.log


def test_the_quota_line_appears_after_the_answer_that_reaches_eighty_percent(
    live_server_url, page, login, alice, conversation, simulator
):
    site = SiteDefaults.load()
    site.user_answers = 5
    site.save()
    for _ in range(3):
        conversation.messages.create(role=Message.Role.USER, content="q")
        conversation.messages.create(role=Message.Role.ASSISTANT, content="a")

    open_conversation(page, login, live_server_url, conversation, alice)
    expect(page.locator("#quota-line")).to_be_hidden()
    ask(page, "The fourth question")
    wait_until_done(page, count=4)
    expect(page.locator("#quota-line")).to_have_text(
        "Your quota is 80% used (4 of 5 answers); it resets at 00:00 UTC."
    )
