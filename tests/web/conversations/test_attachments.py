"""Attachments over HTTP: the upload and its refusals, the removal of an unsent
file, and the files served only to those who may read their conversation
(chat.web.conversations.attachments)."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from django.core.files.storage import default_storage
from django.test import Client
from django.urls import reverse

from chat.models import Attachment, ShareLink, Team
from tests.files import samples
from tests.files.s3 import s3_server, storage  # noqa: F401 (fixtures)

# Every test twice: files in the media folder, then in a bucket of a real
# S3-compatible server (tests/files/s3.py).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("storage")]


def named(raw: bytes, name: str):
    file = io.BytesIO(raw)
    file.name = name
    return file


def upload(client, raw: bytes, name: str, **fields):
    return client.post(
        reverse("upload_attachment"), {"file": named(raw, name), **fields}
    )


@pytest.fixture
def vision(demo_profile):
    demo_profile.supports_vision = True
    demo_profile.save()
    return demo_profile


@pytest.fixture
def picture(alice_client, conversation, vision):
    """alice's screenshot, sent with a question of `conversation`."""
    response = upload(
        alice_client, samples.png(), "screen.png", conversation=conversation.pk
    )
    attachment = Attachment.objects.get(public_id=response.json()["id"])
    attachment.message = conversation.messages.create(role="user", content="See?")
    attachment.save()
    return attachment


def asgi_request(
    method: str, path: str, cookie: bytes, *extra: tuple[bytes, bytes]
) -> dict:
    """The scope of a request straight to the site's ASGI application."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"cookie", cookie), *extra],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }


def stored(attachment: Attachment) -> list[bool]:
    return [
        default_storage.exists(name)
        for name in (attachment.storage_name, attachment.thumbnail_name)
        if name
    ]


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


# --------------------------------------------------------------- cut uploads


def test_an_upload_cut_halfway_stores_nothing(alice, settings):
    """The client goes away in the middle of the body: Django's ASGI handler
    stops reading, no view runs, no row and no file are left."""
    from chatsite.asgi import application

    client = Client()
    client.force_login(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    boundary = b"----cut"
    head = (
        b"--" + boundary + b"\r\n"
        b'Content-Disposition: form-data; name="file"; filename="big.txt"\r\n'
        b"Content-Type: text/plain\r\n\r\n"
    )
    body = head + b"x" * 200_000
    before = set(_all_files())

    async def run():
        parts = [body[:100_000], None]
        sent = []

        async def receive():
            part = parts.pop(0)
            if part is None:
                return {"type": "http.disconnect"}
            return {"type": "http.request", "body": part, "more_body": True}

        async def send(message):
            sent.append(message)

        scope = asgi_request(
            "POST",
            "/attachments/",
            cookie,
            (b"content-type", b"multipart/form-data; boundary=" + boundary),
            (b"content-length", str(len(body) + 50).encode()),
        )
        await application(scope, receive, send)
        return sent

    sent = asyncio.run(run())
    assert not any(m.get("status") == 201 for m in sent)
    assert not Attachment.objects.exists()
    assert set(_all_files()) == before


def _all_files() -> list[str]:
    found: list[str] = []
    folders, names = default_storage.listdir("")
    found += names
    for folder in folders:
        found += [f"{folder}/{n}" for n in default_storage.listdir(folder)[1]]
    return found


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


# ------------------------------------------------- costly files (issue 40)

CSRF = "a" * 32


def _multipart(name: str, data: bytes) -> tuple[bytes, bytes]:
    boundary = b"----costly"
    body = (
        b"--" + boundary + b"\r\n"
        b'Content-Disposition: form-data; name="file"; filename="'
        + name.encode()
        + b'"\r\nContent-Type: application/octet-stream\r\n\r\n'
        + data
        + b"\r\n--"
        + boundary
        + b"--\r\n"
    )
    return boundary, body


async def _asgi_upload(user, name: str, data: bytes, *, leave: asyncio.Event | None):
    """POST the file straight to the ASGI application; the client goes away
    (http.disconnect) when `leave` is set. What was sent back."""
    from asgiref.sync import sync_to_async

    from chatsite.asgi import application

    client = Client()
    await sync_to_async(client.force_login)(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}; csrftoken={CSRF}"
    boundary, body = _multipart(name, data)
    parts: list[dict] = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict] = []

    async def receive():
        if parts:
            return parts.pop()
        await (leave or asyncio.Event()).wait()
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = asgi_request(
        "POST",
        reverse("upload_attachment"),
        cookie.encode(),
        (b"content-type", b"multipart/form-data; boundary=" + boundary),
        (b"content-length", str(len(body)).encode()),
        (b"x-csrftoken", CSRF.encode()),
    )
    await application(scope, receive, send)
    return sent


def _answer(sent: list[dict]) -> tuple[int, dict]:
    start, *bodies = sent
    return start["status"], json.loads(b"".join(m.get("body", b"") for m in bodies))


@pytest.mark.django_db(transaction=True)
async def test_a_pdf_sharing_one_stream_on_60_pages_is_refused_in_its_time(
    alice, settings
):
    from tests.work.watching import MB, peak_growth

    settings.ATTACHMENT_READ_SECONDS = 3
    data = samples.shared_stream_pdf(pages=60, operators=5_000)
    with peak_growth() as growth:
        sent = await _asgi_upload(alice, "report.pdf", data, leave=None)
    status, body = _answer(sent)
    assert status == 422
    assert body["error"] == (
        "report.pdf took too long to read: it was stopped after 3 s."
    )
    assert growth.bytes < 100 * MB
    assert not await Attachment.objects.aexists()


@pytest.mark.django_db(transaction=True)
async def test_an_uploader_going_away_kills_the_work_on_their_file(alice):
    from tests.support.waiting import until
    from tests.work.watching import gone, worker_of

    data = samples.shared_stream_pdf(pages=60, operators=5_000)
    leave = asyncio.Event()
    uploading = asyncio.create_task(
        _asgi_upload(alice, "report.pdf", data, leave=leave)
    )
    pid = await until(lambda: worker_of(str(alice.pk)), "the PDF is being read")
    leave.set()
    await asyncio.wait_for(uploading, 30)
    await until(lambda: gone(pid), "the worker reading it is killed")
    assert not await Attachment.objects.aexists()
