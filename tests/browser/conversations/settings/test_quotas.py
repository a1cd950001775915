"""A user over quota, in Chromium: the quiet line near the composer says so, a
sent question is refused with when the quota resets, and the text comes back to
the composer; the model is never asked."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Message, SiteDefaults
from tests.browser.chat_page import (
    ask,
    ask_from_home,
    open_conversation,
    wait_until_done,
)

pytestmark = pytest.mark.django_db(transaction=True)

REACHED = "Your quota is reached (1 of 1 answers); it resets at 00:00 UTC."


def reach_a_quota_of_one(conversation):
    """A quota of one answer a day, used by one answer in `conversation`."""
    site = SiteDefaults.load()
    site.user_answers = 1
    site.save()
    conversation.messages.create(role=Message.Role.USER, content="first")
    conversation.messages.create(role=Message.Role.ASSISTANT, content="first answer")


def test_over_quota_the_question_is_refused_and_given_back(
    live_server_url, page, login, alice, conversation, simulator
):
    reach_a_quota_of_one(conversation)

    open_conversation(page, login, live_server_url, conversation, alice)
    expect(page.locator("#quota-line")).to_have_text(REACHED)
    ask(page, "One more question")
    expect(page.locator("#alert")).to_have_text(REACHED)
    expect(page.locator("#composer-input")).to_have_value("One more question")
    expect(page.locator("#send-button")).to_be_visible()
    assert conversation.messages.count() == 2
    assert not simulator.log


def test_a_question_from_home_refused_stays_in_the_box_even_after_a_reload(
    live_server_url, page, login, alice, conversation, simulator
):
    reach_a_quota_of_one(conversation)

    login(page, alice)
    page.goto(live_server_url + "/")
    ask_from_home(page, "Typed at home")
    expect(page.locator("#alert")).to_have_text(REACHED)
    expect(page.locator("#composer-input")).to_have_value("Typed at home")
    # This tab sent it once: after a reload it waits in the box, unsent.
    page.reload()
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    expect(page.locator("#composer-input")).to_have_value("Typed at home")
    expect(page.locator("#alert")).to_be_hidden()
    assert Message.objects.count() == 2
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
