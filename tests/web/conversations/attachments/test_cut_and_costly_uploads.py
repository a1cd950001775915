"""Uploads that go wrong on the way in: cut halfway (nothing stored), and
costly files (issue 40) refused in their time, their work killed when the
uploader goes away."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.core.files.storage import default_storage
from django.test import Client
from django.urls import reverse

from chat.models import Attachment
from tests.files import samples
from tests.web.conversations.attachments.attaching import asgi_request

# Every test twice: files in the media folder, then in a bucket of a real
# S3-compatible server (tests/files/s3.py).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("storage")]


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
