"""The sidebar's theme select in Chromium: applied at once, without a reload,
kept for the next pages; a save that fails puts the theme back."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, UserSettings
from tests.browser.chat_page import open_conversation

pytestmark = pytest.mark.django_db(transaction=True)

BACKGROUND = "getComputedStyle(document.body).backgroundColor"


def test_the_theme_applies_at_once_and_is_kept(
    live_server_url, page, login, alice, demo_profile, simulator
):
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    page.emulate_media(color_scheme="light")
    open_conversation(page, login, live_server_url, conversation, alice)
    light = page.evaluate(BACKGROUND)
    with page.expect_response(lambda r: r.url.endswith("/account/theme/")) as saved:
        page.select_option("#theme-select", "dark")
    assert saved.value.status == 204
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    assert page.evaluate(BACKGROUND) != light
    code_dark = page.locator('link[data-code-theme="dark"]')
    expect(code_dark).to_have_attribute("media", "all")
    assert UserSettings.objects.get(user=alice).theme == "dark"

    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    expect(page.locator("#theme-select")).to_have_value("dark")

    # The save fails: the theme the user has is put back.
    page.route("**/account/theme/", lambda route: route.fulfill(status=500))
    page.select_option("#theme-select", "light")
    expect(page.locator("#theme-select")).to_have_value("dark")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    expect(page.locator("#sidebar-error")).to_be_visible()
    assert UserSettings.objects.get(user=alice).theme == "dark"
