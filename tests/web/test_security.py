"""Everything a stranger can send is hostile: the site's defences, end to end.

The URL walks below read the whole URLconf, so pages added later are covered
without touching this file; public pages are listed in PUBLIC_URL_NAMES.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import websockets
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from chat.live.protocol import frames
from chat.models import Conversation, Message
from chat.sockets.close_codes import CLOSE_RATE_LIMITED
from chat.sockets.routing import websocket_urlpatterns
from chatsite.asgi import application
from tests.conftest import PASSWORDS
from tests.support.communicators import (
    ORIGIN,
    WebsocketCommunicator,
    connect,
    frames_until,
)
from tests.support.daphnes import frames_until as process_frames_until
from tests.support.threads import in_thread
from tests.web.signing_in import fresh_cache, sign_in

ROOT = Path(__file__).resolve().parents[2]

# Pages anyone may open, whatever their parameters say ("namespace:name" for
# namespaced ones).
PUBLIC_URL_NAMES = {"login", "logout", "setup", "home"}
# Sockets that are public by design (a share link's token is its authority).
PUBLIC_SOCKET_PREFIXES = ("ws/share/",)

HOSTILE = (
    "Hi <script>alert('script')</script> <img src=x onerror=alert('img')> "
    '<a href="javascript:alert(1)">html link</a> [md link](javascript:alert(2)) '
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgzKTwvc2NyaXB0Pg==) "
    "<svg onload=alert(4)></svg> <iframe src=javascript:alert(5)></iframe>"
)


@pytest.fixture(autouse=True)
def _fresh_cache(settings):
    """Sign-in failure counts live in the cache."""
    fresh_cache(settings)


# --------------------------------------------------------------------------
# Walking the URLconf

PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


def url_patterns(patterns=None, prefix="", namespace=""):
    """(route, pattern, namespace) of every URL pattern, includes flattened."""
    if patterns is None:
        patterns = get_resolver().url_patterns
    for entry in patterns:
        route = prefix + str(entry.pattern).lstrip("^").rstrip("$")
        if isinstance(entry, URLResolver):
            inner = entry.namespace or namespace
            yield from url_patterns(entry.url_patterns, route, inner)
        else:
            assert isinstance(entry, URLPattern)
            yield route, entry, namespace


def fill(route: str, values: dict[str, object]) -> str:
    return "/" + PARAMETER.sub(lambda m: str(values[m.group("name")]), route)


def urls_for(route: str, candidates: list[int]):
    """Every way of filling the route's parameters from the candidate ids."""
    names = [m.group("name") for m in PARAMETER.finditer(route)]
    for combination in itertools.product(candidates, repeat=len(names)):
        yield fill(route, dict(zip(names, combination, strict=True)))


# The API's paths (chat.api.urls): a key signs their requests in, not a cookie.
API_ROUTES = ("v1/", "api/")


def walked_routes(*, with_parameters: bool):
    for route, pattern, namespace in url_patterns():
        if "(" in route:
            # The admin's app index and catch-all take no object ids; elsewhere
            # a regex route would escape the walks, so it must not exist.
            assert namespace == "admin", f"{route}: the walks only fill path()"
            continue
        if bool(PARAMETER.search(route)) == with_parameters:
            yield route, pattern, namespace


# --------------------------------------------------------------------------
# Sockets


@pytest.mark.django_db(transaction=True)
async def test_someone_elses_conversation_socket_is_closed_4403_for_every_route(
    alice, bob
):
    """Every socket route taking an id refuses bob on alice's objects (see also
    tests/sockets/test_consumers.py for the single route's 4401/4403)."""
    mine = await Conversation.objects.acreate(owner=alice, title="alice's")
    message = await Message.objects.acreate(
        conversation=mine, role="user", content="private"
    )
    checked = []
    for entry in websocket_urlpatterns:
        route = str(entry.pattern)
        if route.startswith(PUBLIC_SOCKET_PREFIXES) or not PARAMETER.search(route):
            continue
        for url in urls_for(route, [mine.pk, message.pk]):
            communicator = WebsocketCommunicator(application, url, headers=[ORIGIN])
            communicator.scope["user"] = bob
            await communicator.connect()
            output = await communicator.receive_output(timeout=5)
            await communicator.disconnect()
            assert output == {"type": "websocket.close", "code": 4403}, url
            checked.append(url)
    assert f"/ws/conversations/{mine.pk}/" in checked


@pytest.mark.django_db(transaction=True)
def test_the_live_server_refuses_cross_origin_sockets(
    live_server_url, alice, bob, session_cookie
):
    """Through Daphne and the whole ASGI stack, with a real WebSocket client."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidStatus

    conversation = Conversation.objects.create(owner=alice)
    url = live_server_url.replace("http://", "ws://")
    url += f"/ws/conversations/{conversation.pk}/"

    # Cookies first: the ORM inside asyncio.run would open a connection of its own.
    cookies = {"alice": session_cookie(alice), "bob": session_cookie(bob)}

    async def attempt(origin: str, user: str) -> object:
        headers = {"Cookie": cookies[user]}
        try:
            async with connect(url, origin=origin, additional_headers=headers) as ws:
                try:
                    await asyncio.wait_for(ws.recv(), timeout=5)
                except ConnectionClosed as closed:
                    return closed.rcvd.code if closed.rcvd else None
                return "open"
        except InvalidStatus as refused:
            return refused.response.status_code

    async def attempts() -> list[object]:
        return [
            await attempt("http://evil.example", "alice"),
            await attempt(live_server_url, "bob"),
        ]

    cross_origin, someone_else = asyncio.run(attempts())
    assert cross_origin == 403  # the handshake itself is refused
    assert someone_else == 4403


@pytest.mark.django_db(transaction=True)
async def test_frame_flood_is_answered_once_then_closed_with_4429(
    alice, conversation, settings
):
    settings.WS_FRAME_RATE = 1
    settings.WS_FRAME_BURST = 5
    settings.WS_FLOOD_CLOSE_AFTER = 10
    communicator = await connect(alice, conversation)
    for _ in range(5):  # the burst: accepted (a stop with nothing running is silent)
        await communicator.send_json_to({"type": "stop"})
    assert await communicator.receive_nothing(timeout=0.2)
    for _ in range(40):
        await communicator.send_json_to({"type": "stop"})
    outputs = []
    while True:
        output = await communicator.receive_output(timeout=5)
        outputs.append(output)
        if output["type"] == "websocket.close":
            break
    await communicator.disconnect()

    errors = [json.loads(o["text"]) for o in outputs if o["type"] == "websocket.send"]
    assert [e["code"] for e in errors] == ["rate_limited"]
    assert errors[0]["message_id"] is None and "Slow down" in errors[0]["detail"]
    assert outputs[-1] == {"type": "websocket.close", "code": CLOSE_RATE_LIMITED}


@pytest.mark.django_db(transaction=True)
async def test_a_burst_within_the_limit_is_answered_normally(
    alice, conversation, settings
):
    settings.WS_FRAME_BURST = 3
    communicator = await connect(alice, conversation)
    for _ in range(3):
        await communicator.send_to(text_data="not json")
        frame = await communicator.receive_json_from(timeout=5)
        assert frame["code"] == "bad_frame"
    await communicator.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_frame_over_the_default_limit_is_refused_clearly(alice, conversation):
    communicator = await connect(alice, conversation)
    too_long = "x" * (frames.max_frame_chars() + 1)
    await communicator.send_to(text_data=too_long)
    refused = await communicator.receive_json_from(timeout=5)
    huge_message = "y" * (frames.max_frame_chars() - 100)
    await communicator.send_json_to({"type": "send", "content": huge_message})
    too_much = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    assert refused["code"] == "frame_too_large" and refused["detail"]
    assert too_much["code"] == "message_too_long" and "limit" in too_much["detail"]
    assert await conversation.messages.acount() == 0


@pytest.mark.django_db(transaction=True)
async def test_daphne_closes_a_socket_sending_more_than_any_frame_we_take(
    live_server_url, alice, conversation, session_cookie
):
    url = f"ws{live_server_url[4:]}/ws/conversations/{conversation.pk}/"
    headers = {
        "Cookie": await in_thread(session_cookie, alice),
        "Origin": live_server_url,
    }
    async with websockets.connect(url, additional_headers=headers) as ws:
        # The longest message, in 4-byte characters, still reaches the consumer,
        # which answers it clearly.
        content = "\U0001f600" * (settings.MESSAGE_MAX_CHARS + 1)
        await ws.send(
            json.dumps({"type": "send", "content": content}, ensure_ascii=False)
        )
        error = (await process_frames_until(ws, "error"))[-1]
        assert error["code"] == "message_too_long"
        # Up to Daphne's limit, a frame reaches the consumer and is refused by it
        # with the socket left open; one byte more and Daphne drops the socket
        # before buffering the message for us.
        await ws.send("x" * frames.max_frame_bytes())
        error = (await process_frames_until(ws, "error"))[-1]
        assert error["code"] == "frame_too_large"
        await ws.send("x" * (frames.max_frame_bytes() + 1))
        with pytest.raises(websockets.ConnectionClosedError) as closed:
            await process_frames_until(ws, "never")
    # Daphne closes it with "message too big" (chat.sockets.daphne_protocol), not by
    # dropping the connection (1006, which looks like a network failure).
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    assert await conversation.messages.acount() == 0


# --------------------------------------------------------------------------
# HTTP: CSRF on every POST, nobody else's objects by id


@pytest.mark.django_db
@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "alice"])
def test_every_post_needs_a_csrf_token(alice, signed_in):
    client = Client(enforce_csrf_checks=True)
    if signed_in:
        client.force_login(alice)
    conversation = Conversation.objects.create(owner=alice)
    seen = set()
    for route, pattern, namespace in itertools.chain(
        walked_routes(with_parameters=False), walked_routes(with_parameters=True)
    ):
        url = next(urls_for(route, [conversation.pk]))
        response = client.post(url, {"title": "x", "username": "alice"})
        if route.lstrip("^").startswith(API_ROUTES):
            # The API is signed in by a key, never by the session cookie, so
            # CSRF cannot apply: without a key it refuses (chat.api.auth).
            assert response.status_code in (401, 404, 405), (url, response.status_code)
            continue
        assert response.status_code in (403, 405), (url, response.status_code)
        if response.status_code == 403:
            assert b"CSRF" in response.content, url
        seen.add(f"{namespace}:{pattern.name}" if namespace else pattern.name)
    assert {
        "login",
        "logout",
        "setup",
        "new_conversation",
        "rename_conversation",
        "delete_conversation",
        "set_thinking",
        "admin:login",
        "admin:chat_conversation_change",
    } <= seen


@pytest.fixture
def alices_objects(alice):
    """Ids of everything alice owns; bob owns nothing, so no id is his."""
    conversation = Conversation.objects.create(owner=alice, title="alice's secret")
    question = Message.objects.create(
        conversation=conversation, role="user", content="secret question"
    )
    answer = Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="secret answer",
        status=Message.Status.DONE,
    )
    return [conversation.pk, question.pk, answer.pk]


@pytest.mark.django_db
def test_no_page_shows_bob_an_object_of_alices_by_id(bob_client, alices_objects):
    walked = set()
    for route, pattern, namespace in walked_routes(with_parameters=True):
        name = f"{namespace}:{pattern.name}" if namespace else pattern.name
        if namespace == "admin" or name in PUBLIC_URL_NAMES:
            continue  # the admin: see the next test
        for url in urls_for(route, alices_objects):
            get, post = bob_client.get(url), bob_client.post(url)
            statuses = (get.status_code, post.status_code)
            assert set(statuses) <= {404, 405} and 404 in statuses, (url, statuses)
        walked.add(name)
    assert {
        "conversation",
        "conversation_item",
        "set_thinking",
        "rename_conversation",
        "delete_conversation",
        "message_source",
        "show_version",
    } <= walked
    assert Conversation.objects.get(pk=alices_objects[0]).title == "alice's secret"
    assert Message.objects.filter(conversation_id=alices_objects[0]).count() == 2


@pytest.mark.django_db
def test_admin_pages_send_non_staff_to_the_admin_sign_in(bob_client, alices_objects):
    walked = 0
    for route, _pattern, namespace in walked_routes(with_parameters=True):
        if namespace != "admin":
            continue
        for url in urls_for(route, alices_objects[:2]):
            response = bob_client.get(url)
            assert response.status_code == 302, url
            assert response.url.startswith(reverse("admin:login")), url
            walked += 1
    assert walked > 10


# --------------------------------------------------------------------------
# Model output is inert on the server-rendered page


class ActiveContent(HTMLParser):
    """Collects anything in a page that could run script."""

    URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "data"}

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.in_script = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for name, value in attributes.items():
            if name.startswith("on"):
                self.found.append(f"{tag}[{name}]")
            cleaned = re.sub(r"\s", "", value or "").lower()
            scripted = re.match(r"(javascript|vbscript|data):", cleaned)
            favicon = tag == "link" and cleaned.startswith("data:image/svg")
            if name in self.URL_ATTRIBUTES and scripted and not favicon:
                self.found.append(f"{tag}[{name}={cleaned[:30]}]")
        if tag in {"iframe", "object", "embed", "svg", "base"}:
            self.found.append(tag)
        if tag == "script":
            self.in_script = True
            # Our files, and the translations' catalog (chat.web.languages).
            if not (attributes.get("src") or "").startswith(("/static/", "/jsi18n/")):
                self.found.append("script without a /static/ src")

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_script = False

    def handle_data(self, data):
        if self.in_script and data.strip():
            self.found.append("inline script")


def active_content(html: str) -> list[str]:
    parser = ActiveContent()
    parser.feed(html)
    return parser.found


@pytest.mark.django_db
@pytest.mark.parametrize("status", [Message.Status.DONE, Message.Status.STREAMING])
def test_model_output_is_inert_on_the_conversation_page(alice_client, alice, status):
    conversation = Conversation.objects.create(owner=alice, title=HOSTILE[:200])
    Message.objects.create(conversation=conversation, role="user", content=HOSTILE)
    answer = Message.objects.create(
        conversation=conversation,
        role="assistant",
        content=HOSTILE,
        thinking=HOSTILE,
        status=status,
        error_detail=HOSTILE if status == Message.Status.DONE else "",
    )
    page = alice_client.get(reverse("conversation", args=[conversation.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    # Inline SVG icons are the site's own (no event handlers, checked too).
    found = [f for f in active_content(html) if f != "svg"]
    assert found == []
    assert "&lt;script&gt;alert(&#x27;script&#x27;)&lt;/script&gt;" in html

    frame_html = frames.message(answer)["message"]["html"]
    assert [f for f in active_content(frame_html) if f != "svg"] == []
    sidebar = alice_client.get(reverse("home")).content.decode()
    assert [f for f in active_content(sidebar) if f != "svg"] == []


# --------------------------------------------------------------------------
# Sign-in throttling


@pytest.mark.django_db
def test_sign_in_is_refused_after_repeated_failures_even_with_the_password(
    client, alice, settings
):
    settings.SIGNIN_FAILURES_PER_USERNAME = 5
    for _ in range(5):
        response = sign_in(client, "alice", "wrong")
        assert response.status_code == 200
        assert "correct username and password" in response.content.decode()
    response = sign_in(client, "Alice ", PASSWORDS["alice"])
    assert response.status_code == 429
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert "15 minutes" in response.content.decode()
    assert "_auth_user_id" not in client.session
    # Another account from elsewhere is not affected.
    other = Client(REMOTE_ADDR="10.0.0.9")
    assert sign_in(other, "bob", "wrong").status_code == 200


@pytest.mark.django_db
def test_failing_with_someone_elses_username_does_not_lock_them_out(
    client, alice, settings
):
    settings.SIGNIN_FAILURES_PER_USERNAME = 3
    for _ in range(3):
        assert sign_in(client, "alice", "wrong").status_code == 200
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 429
    # Alice, at her own desk, still signs in; the other address stays refused.
    at_her_desk = Client(REMOTE_ADDR="10.0.0.7")
    assert sign_in(at_her_desk, "alice", PASSWORDS["alice"]).status_code == 302
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 429


@pytest.mark.django_db
def test_the_lockout_ends_with_its_window(client, alice, settings):
    settings.SIGNIN_FAILURES_PER_USERNAME = 2
    for _ in range(2):
        sign_in(client, "alice", "wrong")
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 429
    fresh_cache(settings)  # what the window's expiry does
    response = sign_in(client, "alice", PASSWORDS["alice"])
    assert response.status_code == 302 and client.session["_auth_user_id"]


@pytest.mark.django_db
def test_a_successful_sign_in_forgets_earlier_failures(client, alice, settings):
    settings.SIGNIN_FAILURES_PER_USERNAME = 3
    for _ in range(2):
        sign_in(client, "alice", "wrong")
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 302
    client.logout()
    for _ in range(2):
        assert sign_in(client, "alice", "wrong").status_code == 200
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 302


@pytest.mark.django_db
def test_one_address_trying_many_usernames_is_refused(client, alice, settings):
    settings.SIGNIN_FAILURES_PER_ADDRESS = 4
    for name in ("a", "b", "c", "d"):
        assert sign_in(client, name, "guess").status_code == 200
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 429
    elsewhere = Client(REMOTE_ADDR="10.1.2.3")
    assert sign_in(elsewhere, "alice", PASSWORDS["alice"]).status_code == 302


@pytest.mark.django_db
def test_the_admin_sign_in_is_throttled_too(client, admin_user, settings):
    settings.SIGNIN_FAILURES_PER_USERNAME = 2
    path = reverse("admin:login")
    for _ in range(2):
        sign_in(client, "admin", "wrong", path)
    response = sign_in(client, "admin", PASSWORDS["admin"], path)
    assert response.status_code == 200
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_sign_in_still_works_while_the_cache_is_away(client, alice, settings, caplog):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens there
        }
    }
    assert sign_in(client, "alice", "wrong").status_code == 200
    assert sign_in(client, "alice", PASSWORDS["alice"]).status_code == 302
    assert "sign-in failures are not counted" in caplog.text


# --------------------------------------------------------------------------
# Headers and deployment checks


@pytest.mark.django_db
def test_security_headers_are_set(alice_client, alice):
    conversation = Conversation.objects.create(owner=alice)
    for url in ("/login/", reverse("conversation", args=[conversation.pk])):
        response = alice_client.get(url)
        assert response.status_code == 200
        policy = dict(
            part.strip().split(" ", 1)
            for part in response["Content-Security-Policy"].split(";")
        )
        assert policy["script-src"] == "'self'"
        assert policy["style-src-elem"] == "'self'"
        assert policy["object-src"] == "'none'"
        assert policy["frame-ancestors"] == "'none'"
        assert policy["base-uri"] == "'none'"
        assert policy["connect-src"] == "'self' ws://testserver"
        assert response["X-Frame-Options"] == "DENY"
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["Referrer-Policy"] == "same-origin"
        assert response["Cross-Origin-Opener-Policy"] == "same-origin"


@pytest.mark.django_db
def test_sockets_are_allowed_back_to_the_same_host_over_tls(client, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    response = client.get("/login/", headers={"x-forwarded-proto": "https"})
    assert "connect-src 'self' wss://testserver" in response["Content-Security-Policy"]


@pytest.mark.django_db
def test_pages_have_no_inline_script_or_style_for_the_policy_to_block(
    alice_client, alice
):
    conversation = Conversation.objects.create(owner=alice, title="t")
    urls = [
        "/login/",
        "/",
        reverse("conversation", args=[conversation.pk]),
        reverse("rename_conversation", args=[conversation.pk]),
    ]
    for url in urls:
        html = alice_client.get(url).content.decode()
        assert "<style" not in html, url
        assert [f for f in active_content(html) if f != "svg"] == [], url


def test_check_deploy_is_clean_with_production_settings():
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "SECURE_", "HTTPS_"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="chatsite.settings",
        DEBUG="false",
        SECRET_KEY="k3Q9-production-secret-" + "z8Xw" * 12,
        ALLOWED_HOSTS="chat.example.com",
        CSRF_TRUSTED_ORIGINS="https://chat.example.com",
        HTTPS_ONLY="true",
        TRUST_X_FORWARDED_PROTO="true",
        SECURE_HSTS_SECONDS="31536000",
        REDIS_URL=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.django_db(transaction=True)
async def test_resume_cannot_reach_an_answer_in_someone_elses_conversation(
    alice, bob, demo_profile, simulator
):
    simulator.config.tps = 40
    simulator.config.answer_tokens = 400
    theirs = await Conversation.objects.acreate(owner=bob, model_profile=demo_profile)
    mine = await Conversation.objects.acreate(owner=alice, model_profile=demo_profile)
    bobs = await connect(bob, theirs)
    await bobs.send_json_to({"type": "send", "content": "my secret", "client_id": ""})
    started = await frames_until(bobs, "content")
    answer_id = next(f["message_id"] for f in started if f["type"] == "start")

    alices = await connect(alice, mine)
    await alices.send_json_to({"type": "resume", "message_id": answer_id, "offset": 0})
    refused = await alices.receive_json_from(timeout=5)
    assert refused["type"] == "error" and refused["code"] == "not_found"
    assert await alices.receive_nothing(timeout=0.3)
    await alices.disconnect()
    await bobs.send_json_to({"type": "stop"})
    await frames_until(bobs, "done")
    await bobs.disconnect()


@pytest.mark.django_db
def test_a_request_for_an_unknown_host_is_refused_with_the_policy_still_set(client):
    response = client.get("/login/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "connect-src 'self'" in response["Content-Security-Policy"]
