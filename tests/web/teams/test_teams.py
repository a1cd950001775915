"""Teams over HTTP: members read shared conversations and continue them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat.models import Conversation, Team

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(alice, bob):
    team = Team.objects.create(name="Research")
    team.members.add(alice, bob)
    return team


@pytest.fixture
def shared(team, conversation):
    conversation.title = "Team notes"
    conversation.save()
    conversation.messages.create(role="user", content="Summarise the paper")
    conversation.messages.create(
        role="assistant", content="It says **three** things.", thinking="Let me read."
    )
    team.conversations.add(conversation)
    return conversation


def test_a_member_reads_a_shared_conversation(bob_client, shared):
    assert "Team notes" in bob_client.get(reverse("team_home")).content.decode()
    response = bob_client.get(reverse("team_conversation", args=[shared.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Summarise the paper" in html and "<strong>three</strong>" in html
    assert "Let me read." in html and "By Alice" in html
    assert 'data-read-only="1"' in html and 'id="composer' not in html
    source = bob_client.get(reverse("team_message_source", args=[shared.pk, 2]))
    assert source.content.decode() == "It says **three** things."


def test_a_non_member_gets_404(django_user_model, shared):
    from django.test import Client

    carol = django_user_model.objects.create_user("carol")
    client = Client()
    client.force_login(carol)
    for url in (
        reverse("team_conversation", args=[shared.pk]),
        reverse("team_message_source", args=[shared.pk, 1]),
    ):
        assert client.get(url).status_code == 404
    assert client.post(reverse("continue_in_copy", args=[shared.pk])).status_code == 404
    assert "Team notes" not in client.get(reverse("team_home")).content.decode()
    assert Conversation.objects.count() == 1


def test_an_unshared_conversation_is_404_even_to_members(
    bob_client, conversation, team
):
    url = reverse("team_conversation", args=[conversation.pk])
    assert bob_client.get(url).status_code == 404


def test_signed_out_visitors_are_sent_to_sign_in(client, shared):
    response = client.get(reverse("team_conversation", args=[shared.pk]))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_continue_in_my_own_copy(bob, bob_client, shared):
    response = bob_client.post(reverse("continue_in_copy", args=[shared.pk]))
    copy = Conversation.objects.get(owner=bob)
    assert response.status_code == 302 and response.url == copy.get_absolute_url()
    assert copy.title == "Team notes (copy)"
    assert [m.content for m in copy.messages.all()] == [
        "Summarise the paper",
        "It says **three** things.",
    ]
    assert bob_client.get(copy.get_absolute_url()).status_code == 200
    assert shared.messages.count() == 2
    assert (
        bob_client.get(reverse("continue_in_copy", args=[shared.pk])).status_code == 405
    )
