"""The versions of a turn: the last answer shows them, and a chosen version
is swapped in."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Message, turn_rows

pytestmark = pytest.mark.django_db


# The versions of a turn ("‹ 1 / 2 ›").


@pytest.fixture
def regenerated(own):
    """A question answered twice (a regenerate); the second answer shown."""
    own.messages.create(role="user", content="the question")
    own.messages.create(role="assistant", content="The first answer.")
    turn = turn_rows.begin_regenerate(own).turn
    turn.answer.content, turn.answer.status = "The second answer.", "done"
    turn.answer.save()
    return own


def versions(conversation):
    """The first turn's versions: (question, answer) ids, oldest first."""
    questions = Message.objects.filter(
        conversation=conversation, role="user", parent=None
    ).order_by("pk")
    return [[q.pk, Message.objects.get(parent=q).pk] for q in questions]


def test_the_last_answer_shows_its_versions(client, alice, regenerated):
    client.force_login(alice)
    html = client.get(regenerated.get_absolute_url()).content.decode()
    assert html.count('class="versions"') == 1
    assert '<span class="version-number">2 / 2</span>' in html
    assert 'aria-label="Version 2 of 2, previous version"' in html
    assert 'aria-label="Version 2 of 2, next version" title="Next version">' in html


def test_show_version_swaps_in_the_chosen_version(client, alice, regenerated):
    first, second = versions(regenerated)
    client.force_login(alice)
    response = client.post(reverse("show_version", args=[regenerated.pk, first[0]]))
    assert response.status_code == 200
    sent = response.json()["frames"]
    assert sent[0] == {"type": "removed", "message_ids": second}
    assert [f["message"]["id"] for f in sent[1:]] == first
    answer_html = sent[2]["message"]["html"]
    assert "The first answer." in answer_html
    assert '<span class="version-number">1 / 2</span>' in answer_html
    # A reload shows the chosen version.
    html = client.get(regenerated.get_absolute_url()).content.decode()
    assert "The first answer." in html and "The second answer." not in html
    assert '<span class="version-number">1 / 2</span>' in html


def test_show_version_is_refused_while_an_answer_is_written(client, alice, regenerated):
    first, _ = versions(regenerated)
    regenerated.messages.filter(role="assistant").update(status="streaming")
    client.force_login(alice)
    url = reverse("show_version", args=[regenerated.pk, first[0]])
    response = client.post(url)
    assert response.status_code == 409
    assert response.content.decode() == "Wait for the current answer, or stop it."
    assert "The second answer." in regenerated.messages.values_list(
        "content", flat=True
    )


def test_show_version_of_something_else_is_not_found(client, alice, regenerated):
    earlier = regenerated.messages.create(role="assistant", content="not a question")
    client.force_login(alice)
    for message_id in (earlier.pk, 10_000, 2**70):
        url = reverse("show_version", args=[regenerated.pk, message_id])
        response = client.post(url)
        assert response.status_code == 404
    assert client.get(url).status_code == 405


def test_show_version_needs_the_csrf_token(alice, regenerated):
    first, second = versions(regenerated)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    url = reverse("show_version", args=[regenerated.pk, first[0]])
    assert client.post(url).status_code == 403
    assert list(regenerated.messages.values_list("pk", flat=True)) == second
