"""Attachments over HTTP (chat.web.conversations.attachments): the upload and
its refusals, the removal of an unsent file."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Attachment
from tests.files import samples
from tests.web.conversations.attachments.attaching import named, stored, upload

# Every test twice: files in the media folder, then in a bucket of a real
# S3-compatible server (tests/files/s3.py).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("storage")]


def test_an_image_upload_answers_with_what_the_composer_shows(
    alice_client, alice, conversation, vision
):
    response = upload(
        alice_client,
        samples.png(280, 56),
        "../shots/screen\x07.png",
        conversation=conversation.pk,
        model=vision.tag,
    )
    assert response.status_code == 201
    body = response.json()
    attachment = Attachment.objects.get(public_id=body["id"])
    assert body == {
        "id": attachment.public_id,
        "name": "screen.png",
        "size": attachment.size,
        "kind": "image",
        "tokens": 10 * 2,  # 28-pixel patches
        "url": f"/attachments/{attachment.public_id}/",
        "thumbnail_url": f"/attachments/{attachment.public_id}/thumbnail/",
        "note": None,
    }
    assert len(attachment.public_id) >= 24
    assert (attachment.owner, attachment.conversation, attachment.message) == (
        alice,
        conversation,
        None,
    )
    assert stored(attachment) == [True, True]
    assert len(attachment.sha256) == 64


def test_a_document_upload_counts_its_tokens_for_the_chosen_model(
    alice_client, demo_profile
):
    demo_profile.chars_per_token = 2.0
    demo_profile.save()
    text = "word " * 400
    response = upload(
        alice_client, text.encode(), "notes.txt", model=str(demo_profile.pk)
    )
    body = response.json()
    attachment = Attachment.objects.get(public_id=body["id"])
    assert body["kind"] == "document" and body["thumbnail_url"] is None
    assert body["tokens"] == -(-len(attachment.block()) // 2)
    assert attachment.text == text


def test_a_scanned_pdf_is_kept_with_its_note(alice_client, demo_profile):
    body = upload(alice_client, samples.scanned_pdf(), "scan.pdf").json()
    assert body["note"].startswith("scanned PDF: no text")


@pytest.mark.parametrize(
    ("name", "data", "status", "error"),
    [
        ("run.exe", b"MZ\x90", 415, "run.exe: files .exe are not accepted."),
        ("cat.png", b"GIF89a not a png", 415, "cat.png is not a PNG image"),
        ("locked.pdf", samples.encrypted_pdf(), 422, "protected by a password"),
        ("broken.pdf", samples.corrupt_pdf(), 422, "the PDF is damaged"),
        ("bomb.png", samples.bomb_png(), 422, "too many pixels to open safely"),
    ],
)
def test_a_refused_upload_says_why_in_json_and_stores_nothing(
    alice_client, vision, name, data, status, error
):
    response = upload(alice_client, data, name)
    assert response.status_code == status
    assert error in response.json()["error"]
    assert not Attachment.objects.exists()


def test_a_refusal_is_in_the_readers_language(alice_client, vision):
    # Checked in the worker thread the upload is read in (`files.prepare`):
    # the request's language goes with it.
    response = alice_client.post(
        reverse("upload_attachment"),
        {"file": named(samples.corrupt_pdf(), "broken.pdf")},
        HTTP_ACCEPT_LANGUAGE="zh-CN",
    )
    assert response.status_code == 422
    assert response.json()["error"] == "无法读取 broken.pdf：PDF 已损坏或不完整。"
    response = alice_client.post(
        reverse("upload_attachment"),
        {"file": named(b"MZ\x90", "run.exe")},
        HTTP_ACCEPT_LANGUAGE="zh-CN",
    )
    assert response.json()["error"].startswith("run.exe：不接受 .exe 文件。可添加图片")
    assert not Attachment.objects.exists()


def test_a_file_over_the_limit_is_refused_on_the_server(alice_client, settings):
    settings.ATTACHMENT_MAX_BYTES = 2048
    response = upload(alice_client, b"x" * 5000, "big.log")
    assert response.status_code == 413
    assert response.json()["error"] == (
        "The file is too large: attachments are limited to 2 kB."
    )
    assert not Attachment.objects.exists()


def test_a_file_name_of_thousands_of_characters_is_refused_in_json(
    alice_client, caplog
):
    """Django cannot read a form part whose headers pass 1,024 bytes: the
    composer hears why, in JSON like every other refusal, and nothing is
    logged as a failure of the site."""
    response = upload(alice_client, b"hi", "a" * 5000 + ".txt")
    assert response.status_code == 400
    assert response.json()["error"] == (
        "The upload could not be read. If the file's name is very long, "
        "rename the file and try again."
    )
    assert not Attachment.objects.exists()
    assert not [r for r in caplog.records if r.exc_info or r.levelname == "ERROR"]


def test_an_image_for_a_model_without_vision_is_refused_with_the_reason(
    alice_client, demo_profile
):
    response = upload(alice_client, samples.png(), "a.png", model=demo_profile.tag)
    assert response.status_code == 422
    assert response.json()["error"] == (
        "qwen3-demo:8b (demo model) cannot see images: its server does not list "
        "vision among its capabilities."
    )


def test_no_file_or_someone_elses_conversation_is_refused(
    alice_client, bob_client, conversation
):
    response = alice_client.post(reverse("upload_attachment"), {})
    assert response.status_code == 400
    assert response.json()["error"] == "Choose a file to attach."
    response = upload(bob_client, b"hi", "a.txt", conversation=conversation.pk)
    assert response.status_code == 404
    assert not Attachment.objects.exists()


def test_the_upload_checks_the_csrf_token_and_the_session(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert upload(client, b"hi", "a.txt").status_code == 403
    assert upload(Client(), b"hi", "a.txt").status_code == 403
    assert not Attachment.objects.exists()


def test_the_owner_removes_an_unsent_file_and_its_storage(
    alice_client, bob_client, django_capture_on_commit_callbacks
):
    body = upload(alice_client, b"hello", "a.txt").json()
    attachment = Attachment.objects.get(public_id=body["id"])
    url = reverse("attachment", args=[body["id"]])
    assert bob_client.delete(url).status_code == 404
    assert stored(attachment) == [True]
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.delete(url)
    assert response.status_code == 204
    assert not Attachment.objects.filter(pk=attachment.pk).exists()
    assert stored(attachment) == [False]


def test_a_sent_file_cannot_be_removed_alone(alice_client, picture):
    response = alice_client.delete(reverse("attachment", args=[picture.public_id]))
    assert response.status_code == 409
    assert Attachment.objects.filter(pk=picture.pk).exists()
