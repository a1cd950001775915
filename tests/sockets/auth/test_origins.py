"""Sockets open only from the site's own pages: the whole origin (scheme, host,
port) is checked, not the host name alone (chat.sockets.origins)."""

from __future__ import annotations

import asyncio
import json

import pytest

from chat.models import Conversation
from chatsite.asgi import application
from tests.support.communicators import WebsocketCommunicator

# Channels' consumers close stale database connections between events.
pytestmark = pytest.mark.django_db(transaction=True)


async def handshake(origin: str | None, host: str | None, *extra: tuple[str, str]):
    """(accepted, close code) of a socket to an unknown path, which the site
    accepts and closes with 4404 once the origin passes."""
    headers = [(name.encode(), value.encode()) for name, value in extra]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if host is not None:
        headers.append((b"host", host.encode()))
    communicator = WebsocketCommunicator(application, "/ws/nowhere/", headers=headers)
    accepted, _ = await communicator.connect()
    await communicator.disconnect()
    return accepted


SITE = "127.0.0.1:8000"


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:9999",  # another app on the same host
        "http://127.0.0.1",  # port 80 is another origin than 8000
        "https://127.0.0.1:8000",  # another scheme
        "chrome-extension://abcdefghijklmnop",
        "ftp://127.0.0.1:8000",
        "file://",
        "null",
        "http://evil.example:8000",
        "http://127.0.0.1:8000/path",
        "",
        None,
    ],
)
async def test_a_page_of_another_origin_is_refused(origin):
    assert not await handshake(origin, SITE)


@pytest.mark.parametrize(
    ("origin", "host"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8000"),
        ("http://LOCALHOST:8000", "localhost:8000"),
        ("http://[::1]:8000", "[::1]:8000"),
        ("http://127.0.0.1", "127.0.0.1"),
        ("http://127.0.0.1:80", "127.0.0.1"),
    ],
)
async def test_the_sites_own_origin_is_accepted(origin, host):
    assert await handshake(origin, host)


async def test_a_host_the_site_does_not_serve_is_refused_even_from_itself():
    assert not await handshake("http://evil.example", "evil.example")


async def test_a_trusted_origin_is_accepted(settings):
    settings.ALLOWED_HOSTS = ["chat.example.com"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://chat.example.com", "https://*.corp.net"]
    host = "chat.example.com"
    assert await handshake("https://chat.example.com", host)
    assert await handshake("https://eu.corp.net", host)
    assert not await handshake("http://eu.corp.net", host)
    assert not await handshake("https://chat.example.com:8443", host)
    assert not await handshake("http://chat.example.com:8001", host)


async def test_the_proxys_scheme_counts_only_when_the_site_trusts_it(settings):
    settings.ALLOWED_HOSTS = ["chat.example.com"]
    host, proxied = "chat.example.com", ("x-forwarded-proto", "https")
    settings.SECURE_PROXY_SSL_HEADER = None
    assert not await handshake("https://chat.example.com", host, proxied)
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert await handshake("https://chat.example.com", host, proxied)
    assert not await handshake("http://chat.example.com", host, proxied)


async def test_without_a_host_header_only_the_default_port_passes():
    # In-process test scopes only; every browser sends Host.
    assert await handshake("http://127.0.0.1", None)
    assert not await handshake("http://127.0.0.1:9999", None)


async def test_an_unknown_socket_path_is_closed_with_4404():
    communicator = WebsocketCommunicator(
        application, "/ws/nowhere/", headers=[(b"origin", b"http://127.0.0.1")]
    )
    accepted, _ = await communicator.connect()
    assert accepted
    assert await communicator.receive_output(timeout=5) == {
        "type": "websocket.close",
        "code": 4404,
    }
    await communicator.disconnect()


def test_the_live_server_takes_only_its_own_origin(
    live_server_url, alice, session_cookie
):
    """Through Daphne, with a real client: a page on another port of the same
    host (which browsers send the cookie from) is refused at the handshake; the
    site's own page gets its socket; an unknown path is a clean 4404."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidStatus

    conversation = Conversation.objects.create(owner=alice)
    base = live_server_url.replace("http://", "ws://")
    cookie = session_cookie(alice)

    async def attempt(path: str, origin: str) -> object:
        url = f"{base}{path}"
        try:
            async with connect(
                url, origin=origin, additional_headers={"Cookie": cookie}
            ) as ws:
                try:
                    # An open socket answers a frame (here: nothing to resume).
                    await ws.send(json.dumps({"type": "resume", "message_id": 0}))
                    return json.loads(await asyncio.wait_for(ws.recv(), 15))["type"]
                except ConnectionClosed as closed:
                    return closed.rcvd.code if closed.rcvd else None
        except InvalidStatus as refused:
            return refused.response.status_code

    port = int(live_server_url.rsplit(":", 1)[1])
    socket = f"/ws/conversations/{conversation.pk}/"

    async def attempts() -> list[object]:
        return [
            await attempt(socket, f"http://127.0.0.1:{port + 1}"),
            await attempt(socket, "chrome-extension://abcdefghijklmnop"),
            await attempt(socket, "null"),
            await attempt(socket, live_server_url),
            await attempt("/ws/nowhere/", live_server_url),
        ]

    other_port, extension, null, own, unknown = asyncio.run(attempts())
    assert (other_port, extension, null) == (403, 403, 403)
    assert own == "error"  # the answer to the frame
    assert unknown == 4404
