"""The interface's language (chat.web.account.languages): the browser's
Accept-Language, a signed-in user's stored choice over it, English for a
browser that asks for neither; the JavaScript catalog of each language."""

from __future__ import annotations

import html
import json

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Conversation, Message, UserSettings
from tests.web.signing_in import fresh_cache

pytestmark = pytest.mark.django_db

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9,en;q=0.5"}
ENGLISH = {"HTTP_ACCEPT_LANGUAGE": "en-GB,en;q=0.9"}


@pytest.fixture(autouse=True)
def _fresh_cache(settings):
    fresh_cache(settings)


def _text(response):
    return html.unescape(response.content.decode())


def _json(text):
    return json.dumps(text)


def _choose(user, language):
    UserSettings.objects.update_or_create(user=user, defaults={"language": language})


def test_the_sign_in_page_follows_accept_language():
    chinese = _text(Client().get(reverse("login"), **CHINESE))
    assert '<html lang="zh-hans"' in chinese
    assert "登录 chatsite" in chinese
    assert "用户名" in chinese and "密码" in chinese
    assert "Sign in to chatsite" not in chinese
    english = _text(Client().get(reverse("login"), **ENGLISH))
    assert '<html lang="en"' in english and "Sign in to chatsite" in english


def test_a_browser_that_asks_for_neither_gets_english():
    for asked in ({}, {"HTTP_ACCEPT_LANGUAGE": "fr-FR,de;q=0.8"}):
        response = Client().get(reverse("login"), **asked)
        assert '<html lang="en"' in _text(response)
        assert "Sign in to chatsite" in _text(response)
    assert response["Content-Language"] == "en"
    assert "Accept-Language" in response["Vary"]


def test_the_conversation_page_in_chinese_leaves_the_conversation_as_written(
    alice, alice_client, conversation
):
    Message.objects.create(
        conversation=conversation, role="user", content="Hello there, model"
    )
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="Thinking is fun. Send me more.",
        status="done",
        output_tokens=7,
    )
    conversation.title = "Copy and Send"
    conversation.save()
    page = _text(alice_client.get(conversation.get_absolute_url(), **CHINESE))
    assert '<html lang="zh-hans"' in page
    for chinese in ("正在连接…", 'aria-label="发送"', "新对话", "7 个 token"):
        assert chinese in page
    # The users' and the model's words are theirs, never translated.
    assert "Hello there, model" in page
    assert "Thinking is fun. Send me more." in page
    assert "Copy and Send" in page


def test_the_stored_choice_wins_over_the_browser(alice, alice_client):
    _choose(alice, "en")
    page = _text(alice_client.get(reverse("account"), **CHINESE))
    assert '<html lang="en"' in page and "My account" in page
    other = Client()
    other.force_login(alice)
    _choose(alice, "zh-hans")
    page = _text(other.get(reverse("account"), **ENGLISH))
    assert '<html lang="zh-hans"' in page and "我的账户" in page


def test_choosing_on_the_account_page_is_stored_and_applied_at_once(
    alice, alice_client
):
    response = alice_client.post(
        reverse("account"),
        {"display_name": "", "theme": "system", "language": "zh-hans"},
        **ENGLISH,
    )
    assert response.status_code == 302
    assert UserSettings.objects.get(user=alice).language == "zh-hans"
    page = _text(alice_client.get(reverse("account"), **ENGLISH))
    assert "你的设置已保存。" in page and '<html lang="zh-hans"' in page
    # Back to the browser's: English again for an English browser.
    alice_client.post(
        reverse("account"),
        {"display_name": "", "theme": "system", "language": ""},
        **ENGLISH,
    )
    page = _text(alice_client.get(reverse("account"), **ENGLISH))
    assert "Your settings are saved." in page and '<html lang="en"' in page


def test_the_language_select_offers_the_browser_and_both_languages(alice_client):
    page = _text(alice_client.get(reverse("account")))
    assert '<option value="" selected>As the browser</option>' in page
    assert '<option value="en">English</option>' in page
    assert '<option value="zh-hans">简体中文</option>' in page


def test_a_language_that_is_not_offered_is_refused(alice, alice_client):
    response = alice_client.post(
        reverse("account"), {"display_name": "", "theme": "system", "language": "fr"}
    )
    assert response.status_code == 422
    assert UserSettings.objects.filter(user=alice, language="fr").count() == 0


def test_a_choice_made_on_another_device_reaches_this_one(alice, alice_client):
    # The session keeps the choice (no query per request); a full page reads
    # the user's settings anyway and brings the session up to date.
    assert "My account" in _text(alice_client.get(reverse("account"), **ENGLISH))
    _choose(alice, "zh-hans")  # saved elsewhere
    alice_client.get(reverse("account"), **ENGLISH)
    assert "我的账户" in _text(alice_client.get(reverse("account"), **ENGLISH))


def test_errors_from_python_come_in_the_chosen_language(alice, alice_client):
    _choose(alice, "zh-hans")
    conversation = Conversation.objects.create(owner=alice)
    Message.objects.create(
        conversation=conversation, role="assistant", status="streaming", content=""
    )
    response = alice_client.post(
        reverse("delete_conversation", args=[conversation.pk]), **ENGLISH
    )
    assert response.status_code == 409
    assert response.content.decode() == "此对话中仍有回答正在生成：请先停止它。"


def test_the_javascript_catalog_of_each_language():
    chinese = Client().get(reverse("js_catalog", args=["zh-hans"]))
    assert chinese.status_code == 200
    assert chinese["Content-Type"].startswith("text/javascript")
    body = chinese.content.decode()
    assert _json("已连接") in body and _json("目前 %(count)s 个 token") in body
    # Cached by the browser, and revalidated by the compiled catalog's time.
    assert "max-age=3600" in chinese["Cache-Control"]
    assert chinese.has_header("Last-Modified")
    again = Client().get(
        reverse("js_catalog", args=["zh-hans"]),
        HTTP_IF_MODIFIED_SINCE=chinese["Last-Modified"],
    )
    assert again.status_code == 304
    english = Client().get(reverse("js_catalog", args=["en"])).content.decode()
    assert _json("已连接") not in english and "django.gettext" in english
    assert Client().get(reverse("js_catalog", args=["fr"])).status_code == 404


def test_every_page_loads_the_catalog_of_its_language(alice_client):
    page = _text(alice_client.get(reverse("home"), **CHINESE))
    assert '<script defer src="/jsi18n/zh-hans/"></script>' in page
    page = _text(alice_client.get(reverse("home")))
    assert '<script defer src="/jsi18n/en/"></script>' in page
