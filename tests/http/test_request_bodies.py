"""Request bodies held to their route's limit by a live Daphne process before
they are read (chat.http.request_bodies, chat.http.daphne_protocol): refused
at the headers, cut while streaming in, multipart only where an upload is
taken, and no form parsed in the event loop that serves every stream."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import time

import pytest

from chat.api.requests import max_body_bytes
from tests.support.services.daphnes import (
    Daphne,
    daphne_env,
    frames_until,
    open_socket,
    send,
)
from tests.support.threads import in_thread

pytestmark = [pytest.mark.django_db(transaction=True)]

MB = 1024 * 1024
DEADLINE = 20.0  # seconds: generous for a loaded machine; a pass is at once


@pytest.fixture(scope="module")
def daphne(test_mode, tmp_path_factory, django_db_setup, _simulator_server):
    if test_mode == "sqlite":
        pytest.skip("a live Daphne process needs PostgreSQL")
    server = Daphne(daphne_env(), tmp_path_factory.mktemp("bodies") / "daphne.log")
    yield server.start()
    server.stop()


def head(method: str, path: str, *headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers, "", ""]
    return "\r\n".join(lines).encode()


def answer_of(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    top, _, body = raw.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in fields.items()}, body


def exchange(port: int, request_head: bytes, body: bytes = b"") -> bytes:
    """Send the head (and `body`, whatever the server says meanwhile), then
    read the answer until the server closes. Blocking: run in a thread."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as sock:
        sock.sendall(request_head)
        with contextlib.suppress(OSError):  # refused: closed before it all went
            sock.sendall(body)
        received = b""
        try:
            while piece := sock.recv(65536):
                received += piece
        except OSError:
            pass
        return received


def refused_at_headers(port: int, request_head: bytes) -> bytes:
    """Send only the head; the whole answer, which must come without a byte
    of the body, and the connection closed after it."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as sock:
        sock.sendall(request_head)
        received = b""
        while piece := sock.recv(65536):
            received += piece
        return received


# --------------------------------------------------------------- the limits


def test_a_declared_too_large_attachment_is_answered_before_its_body_is_sent(
    daphne, settings
):
    raw = refused_at_headers(
        daphne.port,
        head(
            "POST",
            "/attachments/",
            f"Content-Length: {256 * MB}",
            "Content-Type: multipart/form-data; boundary=x",
            "Cookie: sessionid=whatever",
        ),
    )
    status, headers, body = answer_of(raw)
    assert status == 413
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {
        "error": "The file is too large: attachments are limited to 20 MB."
    }


def test_a_declared_too_large_import_and_api_request_are_refused_in_their_shape(
    daphne,
):
    raw = refused_at_headers(
        daphne.port,
        head("POST", "/account/import/", f"Content-Length: {10**9}"),
    )
    status, headers, body = answer_of(raw)
    assert status == 413 and headers["content-type"].startswith("text/plain")
    assert body.decode() == "The file is too large: imports are limited to 209.715 MB."

    too_much = max_body_bytes() + 1
    raw = refused_at_headers(
        daphne.port,
        head("POST", "/v1/chat/completions", f"Content-Length: {too_much}"),
    )
    status, _, body = answer_of(raw)
    assert status == 413
    assert json.loads(body)["error"]["code"] == "request_too_large"
    raw = refused_at_headers(
        daphne.port, head("POST", "/api/chat", f"Content-Length: {too_much}")
    )
    assert answer_of(raw)[0] == 413 and "error" in json.loads(answer_of(raw)[2])


def test_a_page_takes_no_more_than_djangos_form_limit(daphne):
    raw = refused_at_headers(
        daphne.port, head("POST", "/login/", f"Content-Length: {3 * MB}")
    )
    status, headers, body = answer_of(raw)
    assert status == 413 and headers["connection"] == "close"
    assert body.decode() == (
        "The request is too large: this address takes at most 2.5 MB."
    )


def test_a_chunked_body_over_the_limit_is_cut_where_it_passes_it(daphne):
    """No length declared: counted while read, answered once past the limit,
    although the client goes on sending."""
    piece = b"x" * 65536
    chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
    start = time.monotonic()
    raw = exchange(
        daphne.port,
        head(
            "POST",
            "/login/",
            "Transfer-Encoding: chunked",
            "Content-Type: application/x-www-form-urlencoded",
        ),
        chunk * 160,  # 10 MiB, never terminated: only the limit ends it
    )
    assert answer_of(raw)[0] == 413
    assert time.monotonic() - start < DEADLINE


def test_multipart_is_refused_where_no_upload_is_taken(daphne):
    raw = refused_at_headers(
        daphne.port,
        head(
            "POST",
            "/",
            "Content-Length: 1000000",
            "Content-Type: multipart/form-data; boundary=x",
            "Cookie: csrftoken=" + "a" * 32,
        ),
    )
    status, _, body = answer_of(raw)
    assert status == 415
    assert body.decode() == "This address takes no file uploads."


def test_a_signed_out_upload_is_refused_before_its_body_in_the_readers_language(
    daphne,
):
    raw = refused_at_headers(
        daphne.port,
        head(
            "POST",
            "/attachments/",
            "Content-Length: 1000000",
            "Content-Type: multipart/form-data; boundary=x",
            "Accept-Language: zh-CN,zh;q=0.9",
        ),
    )
    status, _, body = answer_of(raw)
    assert status == 403
    assert json.loads(body) == {"error": "登录后才能添加附件。"}


# --------------------------------------------------------------- no stall


def multipart(size: int) -> tuple[str, bytes]:
    boundary = "b0undary"
    body = (
        (
            f"--{boundary}\r\n"
            'Content-Disposition: form-data; name="file"; filename="a.bin"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + os.urandom(size)
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return f"multipart/form-data; boundary={boundary}", body


async def worst_gap_while(ws, work) -> float:
    """The longest wait between two of the stream's frames while `work` runs
    (in a thread, so that sending the body does not hold this loop)."""
    task = asyncio.ensure_future(in_thread(work))
    last, worst = time.monotonic(), 0.0
    while not task.done():
        try:
            async with asyncio.timeout(0.2):
                await ws.recv()
        except TimeoutError:
            continue
        now = time.monotonic()
        worst, last = max(worst, now - last), now
    await task
    return worst


@pytest.mark.parametrize(
    ("path", "signed_in", "size"),
    [("/", False, 40 * MB), ("/attachments/", True, 19 * MB)],
    ids=["signed-out-to-a-page", "signed-in-attachment"],
)
async def test_a_multipart_body_does_not_stall_another_users_stream(
    daphne, conversation, alice, bob, session_cookie, simulator, path, signed_in, size
):
    """bob's stream keeps its pace while a multipart body arrives (refused at
    its headers, or parsed off the event loop), as it does while the same
    number of bytes arrive as a plain body. Before, Twisted parsed every
    multipart POST in the loop: the stream stopped for about a second."""
    simulator.config.tps = 80
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 100_000
    cookie = await in_thread(session_cookie, alice)
    uploader = (await in_thread(session_cookie, bob)) if signed_in else ""
    ws = await open_socket(daphne, conversation, cookie)
    await send(ws)
    await frames_until(ws, "content")

    content_type, form = multipart(size)
    token = "a" * 32

    def post(kind: str) -> None:
        exchange(
            daphne.port,
            head(
                "POST",
                path,
                f"Content-Length: {len(form)}",
                f"Content-Type: {kind}",
                f"Cookie: csrftoken={token}; {uploader}",
            ),
            form,
        )

    plain = await worst_gap_while(ws, lambda: post("application/octet-stream"))
    parsed = await worst_gap_while(ws, lambda: post(content_type))
    await ws.send(json.dumps({"type": "stop"}))
    await frames_until(ws, "done")
    await ws.close()
    # A floor of ten tokens' time: two quiet gaps differ by noise alone.
    assert parsed < 4 * max(plain, 10 / 80), (parsed, plain)


def peak_memory(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in bytes."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def reset_peak_memory(pid: int) -> int:
    """Its peak set back to what it holds now (Linux: clear_refs), returned."""
    with open(f"/proc/{pid}/clear_refs", "w") as clear:
        clear.write("5")
    return peak_memory(pid)


def import_post(port: int, cookie: str, content_type: str, body: bytes) -> int:
    """The body POSTed to the import, signed in and with the CSRF token; the
    answer's status."""
    token = "a" * 32
    raw = exchange(
        port,
        head(
            "POST",
            "/account/import/",
            f"Content-Length: {len(body)}",
            f"Content-Type: {content_type}",
            f"Cookie: csrftoken={token}; {cookie}",
            f"X-CSRFToken: {token}",
            "X-Requested-With: XMLHttpRequest",
        ),
        body,
    )
    return answer_of(raw)[0]


async def streaming(daphne, conversation, cookie: str, simulator):
    """A socket on `conversation` receiving an 80 tok/s answer."""
    simulator.config.tps = 80
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 100_000
    ws = await open_socket(daphne, conversation, cookie)
    await send(ws)
    await frames_until(ws, "content")
    return ws


async def stop_streaming(ws) -> None:
    await ws.send(json.dumps({"type": "stop"}))
    await frames_until(ws, "done")
    await ws.close()


async def test_a_large_import_is_fed_to_the_application_without_stalling_or_swelling(
    daphne, conversation, alice, bob, session_cookie, simulator
):
    """bob's 100 MB body to the import reaches Django a chunk at a time, a
    turn of the loop each, a couple of chunks at most waiting: alice's stream
    keeps about the pace it has while small bodies are posted, and the
    serving process's peak memory grows by a fraction of the body. Before,
    Daphne put the whole body in the application's queue in one turn of the
    loop (8 KiB a message), and Django drained it without yielding: the
    stream stopped for about a second, and the body sat in memory whole."""
    size = 100 * MB
    ws = await streaming(
        daphne, conversation, await in_thread(session_cookie, alice), simulator
    )
    uploader = await in_thread(session_cookie, bob)
    # Not a form: read by Django, and refused after the CSRF check, without
    # the worker process an export's reading starts (`chat.work`).
    body = os.urandom(size)
    statuses: list[int] = []

    def upload() -> None:
        statuses.append(
            import_post(daphne.port, uploader, "application/octet-stream", body)
        )

    pid = daphne.process.pid
    before = reset_peak_memory(pid)
    started = time.monotonic()
    fed = await worst_gap_while(ws, upload)
    took = time.monotonic() - started
    growth = peak_memory(pid) - before

    def small_bodies() -> None:
        # For as long as the upload took: as many chances of a slow gap.
        while time.monotonic() - started < 2 * took:
            import_post(daphne.port, uploader, "application/octet-stream", b"x" * 1000)

    reference = await worst_gap_while(ws, small_bodies)
    await stop_streaming(ws)
    assert statuses == [422]  # read whole, then "Choose a file": no 5xx
    # A floor of five tokens' time: two quiet gaps differ by noise alone.
    # (Fed: 0.06 s for 190 MB; poured, as before: 1.1 s.)
    assert fed < 4 * max(reference, 5 / 80), (fed, reference)
    assert growth < size / 5, growth
