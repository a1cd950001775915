"""The production recipe, measured: Debian's nginx running `deploy/nginx.conf`
(`tests/support/services/nginx.py`) in front of two Daphne processes. An answer must
stream
through it as the model writes it; a proxy that buffers must be caught."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
import websockets

from chat.models import ApiKey
from tests.support.services.daphnes import frames_until, free_port, send
from tests.support.services.nginx import NGINX, Nginx, render
from tests.support.services.processes import _in_ci

pytestmark = pytest.mark.django_db(transaction=True)

TOKENS = 40  # at 20 tok/s: two seconds of writing
# nginx passes on the body that came with the response's headers at once, even
# when buffering (its proxy_buffer_size part): the check looks at a later text.
NTH = 5


@pytest.fixture
def start_nginx(daphnes, tmp_path):
    """Start nginx with the shipped configuration (or its buffering variant) in
    front of the two Daphne processes; stopped after the test."""
    if not NGINX.exists():
        message = f"{NGINX} is missing: run scripts/ensure-nginx.sh (make test does)"
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)
    started: list[Nginx] = []

    def start(*, buffering: bool = False) -> Nginx:
        port = free_port()
        config = render(tmp_path, port, [d.port for d in daphnes], buffering=buffering)
        started.append(Nginx(tmp_path, port, config).start())
        return started[-1]

    yield start
    for nginx in started:
        nginx.stop()


def tokens_written_at_nth_text(nginx: Nginx, key: str, simulator) -> int:
    """Stream an answer through nginx; return how many tokens the model server
    had written when the NTH piece of text came out of nginx. The answer is
    then read to its end."""
    simulator.config.tps = 20
    simulator.config.ttft_ms = 0
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = TOKENS
    body = {
        "model": "qwen3-demo:8b",
        "messages": [{"role": "user", "content": "Through the proxy?"}],
        "stream": True,
    }
    written: int | None = None
    texts = 0
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.stream(
        "POST",
        f"{nginx.url}/v1/chat/completions",
        json=body,
        headers=headers,
        timeout=30,
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if written is None and line.startswith("data: {"):
                delta = json.loads(line[6:])["choices"][0]["delta"]
                texts += bool(delta.get("content"))
                if texts == NTH:
                    asked = simulator.asked
                    written = asked[-1].tokens_sent
    assert written is not None, f"{texts} pieces of text came through"
    return written


def test_an_answer_streams_through_nginx_as_it_is_written(
    start_nginx, simulator, alice, demo_profile
):
    nginx = start_nginx()
    _, key = ApiKey.issue(alice, "through nginx")
    assert tokens_written_at_nth_text(nginx, key, simulator) < TOKENS


def test_a_proxy_that_buffers_is_caught(start_nginx, simulator, alice, demo_profile):
    """The check above, against the same file with buffering forced on: the
    text after the first comes out only once the whole answer was written."""
    nginx = start_nginx(buffering=True)
    _, key = ApiKey.issue(alice, "through a buffering nginx")
    assert tokens_written_at_nth_text(nginx, key, simulator) == TOKENS


async def test_sockets_health_and_static_files_pass_through_nginx(
    start_nginx, session_cookie, alice, conversation, simulator
):
    nginx = start_nginx()
    async with httpx.AsyncClient(base_url=nginx.url, timeout=10) as client:
        health = await client.get("/healthz")
        assert health.status_code == 200 and health.json()["status"] in {
            "ok",
            "degraded",
        }
        css = await client.get("/static/chat/chat.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith(
            "text/css"
        )
    simulator.config.answer_tokens = 5
    ws = await websockets.connect(
        f"ws://127.0.0.1:{nginx.port}/ws/conversations/{conversation.pk}/",
        additional_headers={"Cookie": session_cookie(alice), "Origin": nginx.url},
    )
    try:
        await send(ws, "through nginx")
        frames = await frames_until(ws, "done")
    finally:
        await ws.close()
    assert frames[-1]["status"] == "done"
    assert any(f["type"] == "content" for f in frames)


@pytest.mark.parametrize(
    "path",
    [
        "/account/import/",
        "/attachments/",
        "/v1/chat/completions",
        "/api/chat",
        "/login/",
    ],
)
def test_nginx_takes_the_same_body_limit_as_daphne_on_each_route(start_nginx, path):
    """nginx answers `Expect: 100-continue` itself: 100 for a declared length it
    takes, 413 at once for one it does not. Its limit must be Daphne's
    (chat.http.request_bodies), not more (the body would cross to Daphne only to
    be refused) nor less."""
    from chat.http.request_bodies import route

    nginx = start_nginx()
    limit = route(path).limit

    def first_line(length: int) -> bytes:
        with socket.create_connection(("127.0.0.1", nginx.port), timeout=10) as sock:
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Content-Length: {length}\r\nExpect: 100-continue\r\n\r\n".encode()
            )
            return sock.recv(4096).split(b"\r\n", 1)[0]

    assert first_line(limit).endswith(b" 100 Continue")
    assert b" 413 " in first_line(limit + 1)
