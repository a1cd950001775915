"""In Chromium: Ctrl+K finds an answer by a word in it, in English and in
Chinese, and opens its conversation at that message, far up a long one."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, Message
from chat.models.paging import page_size

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def _long_conversation(
    owner, profile, needle_at: int, needle: str
) -> tuple[Conversation, int]:
    conversation = Conversation.objects.create(
        owner=owner, model_profile=profile, title="A long talk"
    )
    count = 3 * page_size()
    Message.objects.append_branch(
        [
            Message(
                conversation=conversation,
                role="assistant" if n % 2 else "user",
                content=(
                    f"Answer {n}: {needle}." if n == needle_at else f"m{n} filler"
                ),
                model_tag="qwen3-demo:8b",
            )
            for n in range(count)
        ]
    )
    ids = list(conversation.messages.order_by("pk").values_list("pk", flat=True))
    return conversation, ids[needle_at]


@pytest.mark.parametrize(
    ("needle", "query"),
    [("octopuses have three hearts", "octopus"), ("鲸鱼是哺乳动物", "哺乳")],
)
def test_ctrl_k_finds_an_answer_and_opens_it_at_the_message(
    live_server_url, page, login, alice, demo_profile, needle, query
):
    conversation, target = _long_conversation(alice, demo_profile, 11, needle)
    other = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    login(page, alice)
    page.goto(live_server_url + other.get_absolute_url())
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")

    page.keyboard.press("Control+k")
    dialog = page.locator("#search-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#search-input")).to_be_focused()
    page.keyboard.type(query)
    hit = page.locator(".search-hit").first
    expect(hit).to_contain_text("A long talk")
    expect(hit.locator("mark")).to_have_text(re.compile(query, re.I))
    page.keyboard.press("Enter")

    page.wait_for_url(re.compile(rf"/c/{conversation.pk}/\?message={target}"))
    article = page.locator(f"#message-{target}")
    expect(article).to_have_class(re.compile("search-target"))
    expect(article).to_be_in_viewport()
    # It was not on the newest page: the page reaches down to it from there.
    expect(page.locator("#messages article[data-message-id]").last).not_to_have_id(
        f"message-{target}"
    )


def test_escape_closes_and_the_sidebar_box_opens_it(
    live_server_url, page, login, alice, demo_profile
):
    _long_conversation(alice, demo_profile, 3, "kelp forests")
    login(page, alice)
    page.goto(live_server_url + "/")
    page.locator("#conversation-search").click()
    dialog = page.locator("#search-dialog")
    expect(dialog).to_be_visible()
    page.keyboard.type("kelp")
    expect(page.locator(".search-hit")).to_have_count(1)
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    # Reopened, the last search is still there to refine.
    page.keyboard.press("Control+k")
    expect(page.locator("#search-input")).to_have_value("kelp")


def test_arrows_choose_the_result_enter_opens(
    live_server_url, page, login, alice, demo_profile
):
    for title in ("First krill", "Second krill"):
        conversation = Conversation.objects.create(
            owner=alice, model_profile=demo_profile, title=title
        )
        Message.objects.append_branch(
            [Message(conversation=conversation, role="user", content="krill")]
        )
    login(page, alice)
    page.goto(live_server_url + "/")
    page.keyboard.press("Control+k")
    # One input event, so one search (late answers for a text typed key by key
    # are the next test's).
    page.locator("#search-input").fill("krill")
    hits = page.locator(".search-hit")
    expect(hits).to_have_count(4)  # two titles, two questions
    expect(hits.nth(0)).to_have_class(re.compile("active"))
    page.keyboard.press("ArrowDown")
    expect(hits.nth(1)).to_have_class(re.compile("active"))
    href = hits.nth(1).get_attribute("href")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(re.escape(href)))


# Marks the hits shown now, to wait for the ones the next answer brings.
MARK_HITS = (
    "() => document.querySelectorAll('.search-hit').forEach((h) => { h.old = 1; })"
)
NEW_HITS = "() => [...document.querySelectorAll('.search-hit')].some((h) => !h.old)"


def test_a_late_answer_keeps_the_hit_the_arrows_chose(
    live_server_url, page, login, alice, demo_profile
):
    for title in ("First krill", "Second krill"):
        Conversation.objects.create(
            owner=alice, model_profile=demo_profile, title=title
        )
    login(page, alice)
    page.goto(live_server_url + "/")
    page.keyboard.press("Control+k")
    page.locator("#search-input").fill("krill")
    hits = page.locator(".search-hit")
    expect(hits).to_have_count(2)
    page.keyboard.press("ArrowDown")
    expect(hits.nth(1)).to_have_class(re.compile("active"))
    # The same text answered again (as a request overtaken by the typing
    # would be): the choice stays.
    page.evaluate(MARK_HITS)
    page.locator("#search-form").evaluate("(form) => htmx.trigger(form, 'submit')")
    page.wait_for_function(NEW_HITS)
    expect(hits.nth(1)).to_have_class(re.compile("active"))
    expect(hits.nth(0)).not_to_have_class(re.compile("active"))
    # New text: its first hit is the one Enter opens.
    page.evaluate(MARK_HITS)
    page.locator("#search-input").fill("krill ")
    page.wait_for_function(NEW_HITS)
    expect(hits.nth(0)).to_have_class(re.compile("active"))
    expect(hits.nth(1)).not_to_have_class(re.compile("active"))


def test_ctrl_k_from_a_page_without_the_list(live_server_url, page, login, alice):
    login(page, alice)
    page.goto(live_server_url + "/account/")
    page.keyboard.press("Control+k")
    expect(page.locator("#search-dialog")).to_be_visible()
    expect(page.locator("#search-input")).to_be_focused()
