"""The design system in headless Chromium: on a phone the conversation's header
keeps its title readable and the site's and the staff pages' tables scroll inside
their card; the Django admin wears the site's colours in both of its theme
switches (the system's preference, its own toggle)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, ShareLink
from tests.support.answers import answer

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
LIGHT_BACKGROUND = "rgb(255, 255, 255)"  # --bg, static/chat/tokens.css
DARK_BACKGROUND = "rgb(22, 24, 28)"
PAGE_WIDTH = "document.documentElement.scrollWidth"


# An element made visible whatever the page sets its `hidden` to afterwards.
PIN_SHOWN = """selector => {
  const element = document.querySelector(selector);
  element.hidden = false;
  Object.defineProperty(element, "hidden", { get: () => false, set: () => {} });
}"""


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=PHONE)
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def test_the_phone_header_gives_the_title_the_room(
    live_server_url, phone, login, conversation
):
    conversation.title = "Sorting a list of names in Python, stably"
    conversation.save()
    login(phone, conversation.owner)
    phone.goto(live_server_url + conversation.get_absolute_url())
    expect(phone.locator("#connection")).to_have_attribute("data-state", "live")
    # The model server loading the model shows, as a dot: the title keeps its room.
    # Pinned shown: the page's own preload may still answer "ready" and hide it.
    phone.evaluate(PIN_SHOWN, "#model-state")
    expect(phone.locator("#model-state")).to_be_visible()
    title = phone.locator("#conversation-title").bounding_box()
    header = phone.locator(".chat-header").bounding_box()
    assert title is not None and header is not None
    # One row: the title beside icon-sized controls, and most of the width its own.
    assert header["height"] < 60
    assert title["width"] > PHONE["width"] / 2
    for control in ("#thinking-mode", "#share-button", "#export-menu > summary"):
        box = phone.locator(control).bounding_box()
        assert box is not None and box["width"] <= 40, control
        assert box["x"] + box["width"] <= PHONE["width"], control
    # Their words are still their names.
    expect(phone.locator("#share-button")).to_have_accessible_name("Share")
    assert phone.evaluate(PAGE_WIDTH) == PHONE["width"]


def test_the_site_tables_scroll_inside_their_card_on_a_phone(
    live_server_url, phone, login, conversation
):
    for _ in range(3):
        ShareLink.create_for(conversation)
    login(phone, conversation.owner)
    phone.goto(live_server_url + "/links/")
    card = phone.locator(".table-scroll")
    expect(card.locator("tr.my-link")).to_have_count(3)
    assert card.evaluate("e => e.scrollWidth > e.clientWidth")
    assert phone.evaluate(PAGE_WIDTH) == PHONE["width"]


def test_the_staff_tables_scroll_inside_their_card_on_a_phone(
    live_server_url, phone, login, admin_user, alice
):
    conversation = Conversation.objects.create(owner=alice)
    answer(conversation, ago=timedelta(hours=1), model_tag="a:1b",
           output_tokens=20, eval_ms=1000, first_token_ms=100)  # fmt: skip
    login(phone, admin_user)
    phone.goto(live_server_url + "/admin/stats/throughput/?range=24h")
    card = phone.locator(".table-scroll:has(.throughput-table)").first
    expect(card.locator("tbody tr")).not_to_have_count(0)
    assert card.evaluate("e => e.scrollWidth > e.clientWidth")
    assert phone.evaluate(PAGE_WIDTH) == PHONE["width"]


@pytest.mark.parametrize(
    ("system", "toggle", "background"),
    [
        ("light", None, LIGHT_BACKGROUND),
        ("dark", None, DARK_BACKGROUND),  # the admin's "auto": the system's
        ("light", "dark", DARK_BACKGROUND),  # the admin's own toggle wins
        ("dark", "light", LIGHT_BACKGROUND),
    ],
)
def test_the_admin_wears_the_site_colours(
    live_server_url, browser, login, admin_user, system, toggle, background
):
    context = browser.new_context(color_scheme=system)
    try:
        if toggle is not None:  # what admin/js/theme.js keeps
            context.add_init_script(f"localStorage.setItem('theme', '{toggle}')")
        page = context.new_page()
        login(page, admin_user)
        page.goto(live_server_url + "/admin/")
        expect(page.locator("#site-name")).to_contain_text("chatsite")
        body = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert body == background
        header = page.evaluate(
            "getComputedStyle(document.getElementById('header')).backgroundColor"
        )
        panel = page.evaluate(
            "(() => { const e = document.createElement('div');"
            " e.style.background = 'var(--panel)'; document.body.append(e);"
            " return getComputedStyle(e).backgroundColor; })()"
        )
        assert header == panel  # our panel, not Django's blue band
    finally:
        context.close()
