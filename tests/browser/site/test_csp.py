"""No page breaks its own Content Security Policy (chat.http.security): Chromium
reports every refused script, style, image or connection on the console."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat.models import Conversation, Team
from tests.browser.csp import violations

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def team_talk(alice, bob, demo_profile):
    team = Team.objects.create(name="Research")
    team.members.add(alice, bob)
    conversation = Conversation.objects.create(
        owner=alice, model_profile=demo_profile, title="Team notes"
    )
    conversation.messages.create(role="user", content="Summarise $x^2$ please")
    conversation.messages.create(
        role="assistant",
        content="It says **three** things: $e^{i\\pi}+1=0$.\n\n"
        "| a | b |\n|:-|-:|\n| 1 | 2 |",
        thinking="Let me read.",
        status="done",
    )
    # Model output naming an image elsewhere (a tracking pixel), rendered by the
    # page itself while the answer is being written.
    conversation.messages.create(
        role="assistant",
        content="Look: ![pixel](https://tracker.example/p.png) and $x$.",
        status="streaming",
    )
    team.conversations.add(conversation)
    return conversation


PAGES = {
    # a team member's pages
    "bob": [("team_home", None), ("team_conversation", "conversation")],
    # the admin's team pages
    "admin_user": [
        ("admin:chat_team_changelist", None),
        ("admin:chat_team_add", None),
        ("admin:chat_team_change", "team"),
    ],
    # the owner's own page of the conversation
    "alice": [("conversation", "conversation")],
}


@pytest.mark.parametrize("who", PAGES)
def test_no_page_breaks_the_policy(
    page, login, live_server_url, team_talk, who, request
):
    login(page, request.getfixturevalue(who))
    objects = {"conversation": team_talk, "team": Team.objects.get()}
    for name, of in PAGES[who]:
        url = reverse(name, args=[objects[of].pk] if of else [])
        assert violations(page, live_server_url + url) == [], url
