"""Attachments on the pages: the owner's, the team's and the shared page show
their files, the share dialog includes them, the composer knows the limits."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat.models import ShareLink, Team

# Every test twice: files in the media folder, then in a bucket of a real
# S3-compatible server (tests/files/s3.py).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("storage")]


# --------------------------------------------------------------- pages


def test_the_owners_page_shows_the_thumbnail_and_the_answers_file_count(
    alice_client, picture
):
    picture.conversation.messages.create(
        role="assistant",
        content="A red square.",
        parent=picture.message,
        history_sent=1,
        history_total=1,
    )
    page = alice_client.get(reverse("conversation", args=[picture.conversation_id]))
    html = page.content.decode()
    assert f'src="/attachments/{picture.public_id}/thumbnail/"' in html
    assert "1 of 1 message, 1 file with the question" in html


def test_the_team_page_shows_the_thumbnail(bob_client, alice, bob, picture):
    team = Team.objects.create(name="Research")
    team.members.add(alice, bob)
    team.conversations.add(picture.conversation)
    url = reverse("team_conversation", args=[picture.conversation_id])
    html = bob_client.get(url).content.decode()
    assert f'src="/attachments/{picture.public_id}/thumbnail/"' in html


def test_a_shared_page_shows_files_through_the_link_unless_left_out(client, picture):
    link, token = ShareLink.create_for(picture.conversation)
    html = client.get(reverse("shared", args=[token])).content.decode()
    assert f'src="/s/{token}/files/{picture.public_id}/thumbnail/"' in html
    assert f"/attachments/{picture.public_id}/" not in html
    _, without = ShareLink.create_for(picture.conversation, include_attachments=False)
    html = client.get(reverse("shared", args=[without])).content.decode()
    assert picture.public_id not in html


def test_the_share_dialog_includes_files_unless_unticked(alice_client, picture):
    url = reverse("create_share_link", args=[picture.conversation_id])
    alice_client.post(url, {"mode": "snapshot", "expiry": "never"})
    alice_client.post(
        url, {"mode": "snapshot", "expiry": "never", "include_attachments": "on"}
    )
    links = ShareLink.objects.order_by("pk")
    assert [link.include_attachments for link in links] == [False, True]
    dialog = alice_client.get(reverse("share_dialog", args=[picture.conversation_id]))
    assert (
        'name="include_attachments" id="id_include_attachments" checked'
        in dialog.content.decode()
    )


def test_the_composer_tells_its_script_the_limits_and_the_models_vision(
    alice_client, conversation, demo_profile, settings
):
    settings.ATTACHMENT_MAX_FILES = 4
    html = alice_client.get(reverse("conversation", args=[conversation.pk]))
    html = html.content.decode()
    assert 'data-attach-url="/attachments/"' in html
    assert 'data-attach-max-bytes="20971520"' in html
    assert 'data-attach-max-files="4"' in html
    assert 'data-attach-accept=".png,.jpg,.jpeg,.gif,.webp,.pdf,.docx,.txt,' in html
    assert 'data-vision="false"' in html
    assert (
        'data-vision-reason="its server does not list vision among its '
        'capabilities."' in html
    )
    assert f'data-model="{demo_profile.pk}"' in html
    demo_profile.supports_vision = True
    demo_profile.save()
    html = alice_client.get(reverse("conversation", args=[conversation.pk]))
    assert 'data-vision="true" data-vision-reason=""' in html.content.decode()
