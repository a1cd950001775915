"""What a page may run: model output is inert on the server-rendered page, the
security headers are set, no inline script or style for the policy to block;
the production settings pass `check --deploy`; an unknown host is refused."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.urls import reverse

from chat.live.protocol import frames
from chat.models import Conversation, Message

ROOT = Path(__file__).resolve().parents[3]

HOSTILE = (
    "Hi <script>alert('script')</script> <img src=x onerror=alert('img')> "
    '<a href="javascript:alert(1)">html link</a> [md link](javascript:alert(2)) '
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgzKTwvc2NyaXB0Pg==) "
    "<svg onload=alert(4)></svg> <iframe src=javascript:alert(5)></iframe>"
)


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
            # Our files, and the translations' catalog (chat.web.account.languages).
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


@pytest.mark.django_db
def test_a_request_for_an_unknown_host_is_refused_with_the_policy_still_set(client):
    response = client.get("/login/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "connect-src 'self'" in response["Content-Security-Policy"]
