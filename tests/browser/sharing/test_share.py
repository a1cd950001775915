"""In Chromium: a live link streams an answer to a signed-out browser as it is
written, and revoking the link cuts that viewer off."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, Message, ShareLink, Team

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_live_link_streams_to_a_signed_out_browser_until_revoked(
    live_server_url, browser, page, login, alice, demo_profile, simulator
):
    simulator.config.tps = 20
    simulator.config.think_tokens = 5
    simulator.config.answer_tokens = 400
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    login(page, alice)
    page.goto(live_server_url + conversation.get_absolute_url())
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")

    # The owner makes a live link from the conversation page's dialog.
    page.click("#share-button")
    dialog = page.locator("#share-dialog")
    expect(dialog).to_be_visible()
    dialog.locator("input[name=mode][value=live]").check()
    dialog.locator("select[name=expiry]").select_option("never")
    dialog.locator("button:has-text('Create link')").click()
    url = dialog.locator("#share-new-url").input_value()
    assert re.fullmatch(re.escape(live_server_url) + r"/s/[A-Za-z0-9_-]{43}/", url)
    link = ShareLink.objects.get()
    assert link.is_live and link.expires_at is None
    dialog.locator("button:has-text('Close')").click()

    viewer_context = browser.new_context()  # no cookies: signed out
    try:
        viewer = viewer_context.new_page()
        viewer.goto(url)
        expect(viewer.locator("#chat")).to_have_attribute("data-connected", "1")
        expect(viewer.locator("#composer-input")).to_have_count(0)

        page.fill("#composer-input", "Tell the team about streams")
        page.press("#composer-input", "Enter")

        # The viewer reads the answer while it is still being written.
        streaming = viewer.locator('article.assistant[data-status="streaming"] .answer')
        expect(streaming).not_to_have_text("", timeout=15_000)
        expect(viewer.locator("article.user")).to_have_text(
            "Tell the team about streams"
        )
        assert Message.objects.get(role="assistant").status == "streaming"
        # Messages are named by ordinal; thinking is not shared.
        expect(viewer.locator("article.assistant")).to_have_attribute("id", "message-2")
        expect(viewer.locator("details.thinking")).to_be_hidden()

        # Revoking it (from the dialog) cuts the viewer off mid-answer.
        page.click("#share-button")
        dialog.locator("button:has-text('Revoke')").click()
        expect(dialog.locator(".share-link")).to_contain_text("Revoked")
        expect(viewer.locator("#connection")).to_have_text("Link closed")
        expect(viewer.locator("#alert")).to_have_text(
            "This link is no longer available."
        )
        cut_at = streaming.inner_text()
        # The owner's answer goes on; the viewer's stops where it was cut.
        owner = page.locator('article.assistant[data-status="streaming"] .answer')
        longer = re.compile("^.{" + str(len(cut_at) + 40) + ",}", re.S)
        expect(owner).to_have_text(longer, timeout=20_000)
        assert streaming.inner_text() == cut_at

        response = viewer.reload()
        assert response is not None and response.status == 410
        expect(viewer.locator("h1")).to_have_text("This link is no longer available")
    finally:
        viewer_context.close()
    dialog.locator("button:has-text('Close')").click()
    page.click("#stop-button")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()


def test_two_teammates_share_a_conversation_and_one_continues_it(
    live_server_url, browser, page, login, alice, bob, demo_profile, simulator
):
    team = Team.objects.create(name="Research")
    team.members.add(alice, bob)
    conversation = Conversation.objects.create(
        owner=alice, model_profile=demo_profile, title="Reading list"
    )
    conversation.messages.create(role="user", content="Which papers first?")
    conversation.messages.create(role="assistant", content="Start with **Raft**.")
    login(page, alice)
    page.goto(live_server_url + conversation.get_absolute_url())
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    page.click("#share-button")
    team_box = page.locator("#share-dialog").get_by_label("Research can read it")
    with page.expect_response(lambda r: r.url.endswith("/share/team/")) as saved:
        team_box.check()
    assert saved.value.status == 200
    assert list(team.conversations.all()) == [conversation]

    bob_context = browser.new_context()
    try:
        bob_page = bob_context.new_page()
        login(bob_page, bob)
        bob_page.goto(live_server_url + "/")
        bob_page.click("text=Team")
        bob_page.click("text=Reading list")
        expect(bob_page.locator("article.assistant .answer strong")).to_have_text(
            "Raft"
        )
        expect(bob_page.locator("#composer-input")).to_have_count(0)
        bob_page.click("text=Continue in my own copy")
        expect(bob_page.locator("#composer-input")).to_be_visible()
        expect(bob_page.locator("#conversation-title")).to_have_text(
            "Reading list (copy)"
        )
        copy = Conversation.objects.get(owner=bob)
        assert bob_page.url.endswith(copy.get_absolute_url())
        assert [m.content for m in copy.messages.all()] == [
            "Which papers first?",
            "Start with **Raft**.",
        ]
    finally:
        bob_context.close()


def test_a_live_link_shows_every_word_and_only_what_a_viewer_can_do(
    live_server_url, browser, page, login, alice, demo_profile, simulator
):
    simulator.config.tps = 40
    simulator.config.thinking_text = "first thought then more thoughts"
    simulator.config.answer_text = "First words of the answer, then the rest of it."
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    conversation.messages.create(role="user", content="Earlier question")
    conversation.messages.create(role="assistant", content="Earlier answer")
    _, token = ShareLink.create_for(
        conversation, mode=ShareLink.Mode.LIVE, include_thinking=True
    )
    login(page, alice)
    page.goto(live_server_url + conversation.get_absolute_url())
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")

    viewer_context = browser.new_context()  # no cookies: signed out
    try:
        viewer = viewer_context.new_page()
        errors: list[str] = []
        viewer.on("pageerror", lambda error: errors.append(str(error)))
        viewer.goto(f"{live_server_url}/s/{token}/")
        expect(viewer.locator("#chat")).to_have_attribute("data-connected", "1")
        # Nothing a viewer cannot do is offered.
        expect(viewer.locator(".regenerate, .edit-message")).to_have_count(0)

        page.fill("#composer-input", "Go on")
        page.press("#composer-input", "Enter")
        done = viewer.locator('article.assistant[data-status="done"]')
        expect(done).to_have_count(2, timeout=20_000)
        done = done.last
        answer = Message.objects.filter(role="assistant").order_by("pk").last()
        assert answer is not None and answer.status == "done"
        # Every word arrived live: the page never fell back to the stored text.
        expect(done.locator(".answer")).to_have_text(answer.content)
        assert done.get_attribute("data-resynced") is None
        assert done.locator(".thinking-text").text_content() == answer.thinking
        expect(viewer.locator(".regenerate, .edit-message")).to_have_count(0)
        # The read-only socket was never asked for what only the owner may do.
        expect(viewer.locator("#alert")).to_be_hidden()
        assert errors == []
    finally:
        viewer_context.close()


def test_a_reopened_share_dialog_offers_no_stale_buttons_until_it_is_fresh(
    live_server_url, page, login, alice, demo_profile
):
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    login(page, alice)
    page.goto(live_server_url + conversation.get_absolute_url())
    # The page's modules are running (a click before share.js listens opens
    # nothing: failed once beside two CPU burners).
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    dialog = page.locator("#share-dialog")
    page.click("#share-button")
    dialog.locator("button:has-text('Create link')").click()
    expect(dialog.locator(".share-link button:has-text('Revoke')")).to_be_visible()
    dialog.locator("button:has-text('Close')").click()

    # The dialog's fresh body is held back: until it lands, nothing of the last
    # visit may be clicked (a Revoke sent then is lost under the fresh body).
    held = []
    page.route("**/share/", lambda route: held.append(route))
    page.click("#share-button")
    expect(dialog).to_be_visible()
    expect(dialog.locator("#share-dialog-body")).to_have_text("Loading…")
    expect(dialog.locator(".share-link")).to_have_count(0)
    while not held:  # the request is held (its handler runs in Playwright's waits)
        page.wait_for_timeout(20)
    held[0].continue_()
    expect(dialog.locator(".share-link button:has-text('Revoke')")).to_be_visible()
