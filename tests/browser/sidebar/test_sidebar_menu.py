"""The sidebar from a conversation's page in headless Chromium: an entry's
menu renames and deletes; at a phone's width the sidebar is behind a menu
button."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Conversation
from tests.browser.chat_page import open_conversation

pytestmark = pytest.mark.django_db(transaction=True)


def entry_action(page, conversation, action):
    """Choose `action` in the entry's "…" menu."""
    entry = page.locator(f"#conversation-item-{conversation.pk}")
    entry.locator(".item-menu-button").click()
    entry.get_by_role("menuitem", name=action).click()


def test_sidebar_renames_and_deletes(live_server_url, page, login, alice, demo_profile):
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))

    def make(title):
        conversation = Conversation.objects.create(
            owner=alice, model_profile=demo_profile, title=title
        )
        conversation.messages.create(role="user", content=title)
        return conversation

    current, gamma, delta = (
        make("Alpha notes"),
        make("Gamma plans"),
        make("Delta ideas"),
    )
    open_conversation(page, login, live_server_url, current, alice)
    items = page.locator("#dated-list > li.conversation-item")
    expect(items).to_have_count(3)

    entry = page.locator(f"#conversation-item-{gamma.pk}")
    entry_action(page, gamma, "Rename")
    field = page.locator(f"#rename-{gamma.pk}")
    expect(field).to_be_focused()
    field.fill("")
    field.press("Enter")  # the browser refuses an empty title itself
    field.fill("Gamma, renamed")
    field.press("Enter")
    expect(entry.locator("a")).to_have_text("Gamma, renamed")
    gamma.refresh_from_db()
    assert gamma.title == "Gamma, renamed"

    # Renaming the open conversation renames the page too.
    entry = page.locator(f"#conversation-item-{current.pk}")
    entry_action(page, current, "Rename")
    page.locator(f"#rename-{current.pk}").fill("Alpha, final")
    page.locator(f"#rename-{current.pk}").press("Enter")
    expect(page.locator("#conversation-title")).to_have_text("Alpha, final")
    expect(entry.locator("a")).to_have_attribute("aria-current", "page")

    entry_action(page, delta, "Delete")
    expect(page.locator(f"#conversation-item-{delta.pk}")).to_have_count(0)
    assert dialogs and "Delta ideas" in dialogs[-1]
    assert not Conversation.objects.filter(pk=delta.pk).exists()

    # Deleting the open conversation leaves its page.
    entry_action(page, current, "Delete")
    page.wait_for_url(live_server_url + "/")
    assert list(Conversation.objects.values_list("title", flat=True)) == [
        "Gamma, renamed"
    ]


def test_phone_width_puts_the_sidebar_behind_a_menu_button(
    live_server_url, browser, login, conversation, alice
):
    page = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    open_conversation(page, login, live_server_url, conversation, alice)
    sidebar = page.locator("#sidebar")
    menu = page.locator("#menu-button")
    expect(sidebar).to_be_hidden()
    expect(menu).to_have_attribute("aria-expanded", "false")
    menu.click()
    expect(sidebar).to_be_visible()
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#conversation-search")).to_be_focused()
    page.keyboard.press("Escape")
    expect(sidebar).to_be_hidden()
    expect(menu).to_be_focused()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390  # nothing wider than the phone
    page.context.close()
