"""In Chromium: a question's picture is seen by a team member and by a shared
link's signed-out viewer, each through their own URL; a stranger asking for
the file by its id gets 404."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import expect

from chat.models import Conversation, ShareLink, Team
from tests.files import samples
from tests.files.attaching import attach

pytestmark = pytest.mark.django_db(transaction=True)

SHOWN = "article.user img.attachment-thumbnail"


def wait_until_shown(page) -> None:
    """The thumbnail's picture arrived and decoded (a 404 would leave it 0 wide)."""
    page.wait_for_function(
        "s => { const i = document.querySelector(s);"
        " return i !== null && i.complete && i.naturalWidth > 0; }",
        arg=SHOWN,
    )


def test_team_members_and_link_viewers_see_the_thumbnail_strangers_get_404(
    live_server_url, browser, page, login, alice, bob, demo_profile
):
    conversation = Conversation.objects.create(
        owner=alice, model_profile=demo_profile, title="Screens"
    )
    question = conversation.messages.create(role="user", content="See?")
    conversation.messages.create(
        role="assistant", content="A red rectangle.", parent=question
    )
    picture = attach(alice, "screen.png", samples.png(300, 200), conversation)
    picture.message = question
    picture.save()
    team = Team.objects.create(name="Research")
    team.members.add(alice, bob)
    team.conversations.add(conversation)
    _, token = ShareLink.create_for(conversation)

    login(page, bob)
    page.goto(live_server_url + reverse("team_conversation", args=[conversation.pk]))
    thumbnail = page.locator(SHOWN)
    expect(thumbnail).to_have_attribute(
        "src", f"/attachments/{picture.public_id}/thumbnail/"
    )
    wait_until_shown(page)

    viewer_context = browser.new_context()  # signed out
    try:
        viewer = viewer_context.new_page()
        viewer.goto(live_server_url + reverse("shared", args=[token]))
        shared = viewer.locator(SHOWN)
        expect(shared).to_have_attribute(
            "src", f"/s/{token}/files/{picture.public_id}/thumbnail/"
        )
        wait_until_shown(viewer)
        # The owner's URL is not the viewer's: without a session, no file.
        response = viewer.request.get(
            live_server_url + f"/attachments/{picture.public_id}/",
            max_redirects=0,
        )
        assert response.status in (302, 404)
    finally:
        viewer_context.close()

    carol = get_user_model().objects.create_user("carol")
    stranger_context = browser.new_context()
    try:
        login(stranger_context, carol)
        for path in (
            f"/attachments/{picture.public_id}/",
            f"/attachments/{picture.public_id}/thumbnail/",
        ):
            response = stranger_context.request.get(live_server_url + path)
            assert response.status == 404
    finally:
        stranger_context.close()
