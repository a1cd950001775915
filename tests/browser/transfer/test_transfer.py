"""The user page's import in Chromium, under the site's strict CSP: the file
goes up with its progress shown, the summary comes back, the conversations
are there and say where they came from; a refused file says why."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Conversation
from tests.browser.csp import violations
from tests.transfer.conftest import SAMPLES

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_export_is_imported_from_the_user_page(live_server_url, page, login, alice):
    login(page, alice)
    assert violations(page, f"{live_server_url}/account/") == []
    page.set_input_files("#import-file", str(SAMPLES / "open-webui-all-chats.json"))
    page.click("#import-button")
    summary = page.locator("#import-result .import-summary")
    expect(summary).to_contain_text(
        "Imported from Open WebUI: 7 conversations, 20 messages."
    )
    expect(page.locator("#import-progress")).to_be_hidden()
    assert Conversation.objects.filter(owner=alice).count() == 7

    page.click("#import-result a")  # "Go to my conversations"
    chinese = Conversation.objects.get(owner=alice, title="法国的首都是哪里？")
    page.goto(f"{live_server_url}{chinese.get_absolute_url()}")
    expect(page.locator("#imported-note")).to_have_text("Imported from Open WebUI.")
    expect(page.locator("#messages")).to_contain_text("法国的首都是哪里？")
    assert page.evaluate("window.__cspViolations") == []


def test_a_file_that_is_no_export_is_refused_on_the_page(
    live_server_url, page, login, alice, tmp_path
):
    other = tmp_path / "notes.json"
    other.write_text('{"notes": []}')
    login(page, alice)
    page.goto(f"{live_server_url}/account/")
    page.set_input_files("#import-file", str(other))
    page.click("#import-button")
    expect(page.locator("#import-result .import-error")).to_contain_text(
        "This file is not an export chatsite can read."
    )
    expect(page.locator("#import-button")).to_be_enabled()
    assert not Conversation.objects.filter(owner=alice).exists()
