"""Invitations and the user page in headless Chromium: the admin makes an
invitation and copies its link, the invitee opens it in another browser, picks
a password, lands on their team's page, and chooses a dark theme."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from chat.models import Invitation, Membership, Team
from tests.browser.csp import violations

pytestmark = pytest.mark.django_db(transaction=True)

DARK_BACKGROUND = "rgb(22, 24, 28)"  # --bg of the dark theme, static/chat/tokens.css


def test_an_invitee_joins_by_link_and_picks_a_dark_theme(
    live_server_url, browser, page, login, admin_user, demo_profile
):
    Team.objects.create(name="Research")
    login(page, admin_user)
    page.goto(live_server_url + "/admin/chat/invitation/add/")
    page.fill("#id_email", "carol@example.org")
    page.select_option("#id_team", label="Research")
    page.click("input[name=_save]")
    link = page.locator("#invitation-link").input_value()
    assert link.startswith(live_server_url + "/invite/")

    invitee = browser.new_context(color_scheme="light")
    try:
        tab = invitee.new_page()
        tab.goto(link)
        expect(tab.locator("main")).to_contain_text("Research")
        tab.fill("#id_username", "carol")
        tab.fill("#id_email", "carol@example.org")
        tab.fill("#id_password1", "a-long-new-password-7")
        tab.fill("#id_password2", "a-long-new-password-7")
        tab.click("text=Create my account")
        expect(tab).to_have_url(live_server_url + "/team/")
        assert Membership.objects.get(user__username="carol").team.name == "Research"

        tab.goto(live_server_url + "/account/")
        tab.select_option("#id_theme", "dark")
        tab.fill("#id_display_name", "Carol C.")
        tab.click("text=Save")
        expect(tab.locator(".notice")).to_have_text("Your settings are saved.")
        background = tab.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == DARK_BACKGROUND
        tab.goto(live_server_url + "/")
        expect(tab.locator(".account-name")).to_have_text("Carol C.")

        # The link is spent: opening it again says so.
        tab.goto(link)
        expect(tab.locator("main")).to_contain_text("already been used")
    finally:
        invitee.close()


def test_the_new_pages_keep_the_policy(
    live_server_url, page, login, browser, admin_user, alice, demo_profile
):
    _, token = Invitation.create_with_token(created_by=admin_user)
    stranger = browser.new_context()
    try:
        tab = stranger.new_page()
        url = live_server_url + reverse("invitation", args=[token])
        assert violations(tab, url) == [], url
    finally:
        stranger.close()
    login(page, alice)
    for name in ("account", "change_password"):
        url = live_server_url + reverse(name)
        assert violations(page, url) == [], url
    login(page, admin_user)
    url = live_server_url + reverse("admin:chat_invitation_add")
    assert violations(page, url) == [], url
