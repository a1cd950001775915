"""Attachments over HTTP (chat.web.conversations.attachments): the files
served only to those who may read their conversation, in pieces under ASGI,
and deleted with it."""

from __future__ import annotations

import asyncio

import pytest
from django.urls import reverse

from chat.models import Attachment, ShareLink, Team
from tests.web.conversations.attachments.attaching import asgi_request, stored, upload

# Every test twice: files in the media folder, then in a bucket of a real
# S3-compatible server (tests/files/s3.py).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("storage")]


# --------------------------------------------------------------- reading


def test_the_owner_gets_the_image_inline_never_sniffed(alice_client, picture):
    response = alice_client.get(reverse("attachment", args=[picture.public_id]))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/jpeg"
    assert response["Content-Disposition"] == 'inline; filename="screen.png"'
    assert response["X-Content-Type-Options"] == "nosniff"
    assert b"".join(response.streaming_content) == picture.read()


@pytest.fixture
def big_document(alice_client, settings):
    """alice's text file of a little over two pieces (`FILE_PIECE`)."""
    from chat.web.conversations.attachments import FILE_PIECE

    settings.ATTACHMENT_MAX_BYTES = 4 * FILE_PIECE
    raw = b"word " * ((2 * FILE_PIECE + 100) // 5)
    response = upload(alice_client, raw, "notes.txt")
    assert response.status_code == 201
    return Attachment.objects.get(public_id=response.json()["id"]), raw


@pytest.mark.django_db(transaction=True)
async def test_under_asgi_a_file_is_read_in_pieces_outside_the_database_thread(
    alice_client, big_document, monkeypatch
):
    """Daphne's path: the view runs in the thread that holds the database
    connection, the file's pieces are read in other threads, one at a time,
    never all of it first (chat.http.streamed)."""
    import threading
    import warnings

    from chat.web.conversations import attachments
    from chatsite.asgi import application

    found, raw = big_document
    view_threads: set[int] = set()
    read_threads: set[int] = set()
    readable, pieces = attachments._readable, attachments._pieces

    def watched_readable(request, public_id):
        view_threads.add(threading.get_ident())
        return readable(request, public_id)

    def watched_pieces(name):
        for piece in pieces(name):
            read_threads.add(threading.get_ident())
            yield piece

    monkeypatch.setattr(attachments, "_readable", watched_readable)
    monkeypatch.setattr(attachments, "_pieces", watched_pieces)
    sent: list[dict] = []

    requested = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive():
        if requested:
            return requested.pop()
        await asyncio.Event().wait()  # the client stays until the answer ends

    async def send(message):
        sent.append(message)

    path = reverse("attachment", args=[found.public_id])
    cookie = f"sessionid={alice_client.cookies['sessionid'].value}".encode()
    scope = asgi_request("GET", path, cookie)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await application(scope, receive, send)
    start, *bodies = sent
    assert start["status"] == 200
    headers = {name.lower(): value for name, value in start["headers"]}
    assert headers[b"content-length"] == str(len(raw)).encode()
    assert b"".join(m.get("body", b"") for m in bodies) == raw
    assert len([m for m in bodies if m.get("body")]) >= 3
    assert view_threads and read_threads
    assert not view_threads & read_threads
    assert not [w for w in caught if "iterators" in str(w.message)]


def test_a_document_is_always_downloaded(alice_client):
    body = upload(alice_client, b"<script>alert(1)</script>", "x.html").json()
    response = alice_client.get(body["url"])
    assert response["Content-Disposition"] == 'attachment; filename="x.html"'
    assert response["Content-Type"] == "text/plain"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_a_stranger_gets_404_for_the_file_and_its_thumbnail(bob_client, picture):
    for name in ("attachment", "attachment_thumbnail"):
        assert (
            bob_client.get(reverse(name, args=[picture.public_id])).status_code == 404
        )
    assert bob_client.get(reverse("attachment", args=["no-such-id"])).status_code == 404


def test_a_team_member_sees_the_thumbnail_of_a_shared_conversation(
    bob_client, alice, bob, picture
):
    url = reverse("attachment_thumbnail", args=[picture.public_id])
    assert bob_client.get(url).status_code == 404
    team = Team.objects.create(name="Research")
    team.members.add(alice, bob)
    team.conversations.add(picture.conversation)
    response = bob_client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "image/jpeg"


def test_a_share_link_viewer_sees_the_thumbnail_when_the_link_includes_files(
    client, picture
):
    link, token = ShareLink.create_for(picture.conversation)
    url = reverse("shared_thumbnail", args=[token, picture.public_id])
    response = client.get(url)
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    link.include_attachments = False
    link.save()
    assert client.get(url).status_code == 404
    link.include_attachments = True
    link.revoked_at = link.created_at
    link.save()
    assert client.get(url).status_code == 404


def test_a_share_link_does_not_open_files_of_other_conversations(
    client, picture, alice, demo_profile
):
    other = alice.conversations.create(model_profile=demo_profile)
    other.messages.create(role="user", content="hi")
    _, token = ShareLink.create_for(other)
    url = reverse("shared_file", args=[token, picture.public_id])
    assert client.get(url).status_code == 404


def test_deleting_a_conversation_deletes_its_files(
    alice_client, picture, django_capture_on_commit_callbacks
):
    assert stored(picture) == [True, True]
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post(
            reverse("delete_conversation", args=[picture.conversation_id])
        )
    assert response.status_code in (200, 302)
    assert not Attachment.objects.exists()
    assert stored(picture) == [False, False]
