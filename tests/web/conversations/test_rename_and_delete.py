"""A conversation's sidebar entry: renamed and deleted (htmx or a plain
form), only by its owner; an answer's source for its copy button."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Message

pytestmark = pytest.mark.django_db


# Sidebar: rename and delete (htmx), and the answer's source for its copy button.


def htmx(page_path=None):
    """Headers of an htmx request made from ``page_path``."""
    headers = {"HTTP_HX_REQUEST": "true"}
    if page_path:
        headers["HTTP_HX_CURRENT_URL"] = f"http://testserver{page_path}"
    return headers


def test_rename_form_and_rename(client, alice, own):
    client.force_login(alice)
    url = reverse("rename_conversation", args=[own.pk])
    form = client.get(url, **htmx())
    assert form.status_code == 200
    assert [t.name for t in form.templates][0] == "chat/_rename_form.html"
    assert 'value="Mine"' in form.content.decode()
    response = client.post(url, {"title": "  Renamed  "}, **htmx("/"))
    assert response.status_code == 200
    assert [t.name for t in response.templates][0] == "chat/_conversation_item.html"
    page = response.content.decode()
    assert ">Renamed</a>" in page and 'aria-current="page"' not in page
    own.refresh_from_db()
    assert own.title == "Renamed"


def test_renaming_from_the_conversations_own_page_marks_it_current(client, alice, own):
    client.force_login(alice)
    response = client.post(
        reverse("rename_conversation", args=[own.pk]),
        {"title": "Here"},
        **htmx(own.get_absolute_url()),
    )
    assert 'aria-current="page"' in response.content.decode()


@pytest.mark.parametrize(
    ("language", "says"),
    [("en", "Give it a title."), ("zh-CN,zh;q=0.9", "请填写标题。")],
)
def test_rename_refuses_an_empty_title(client, alice, own, language, says):
    client.force_login(alice)
    response = client.post(
        reverse("rename_conversation", args=[own.pk]),
        {"title": "   "},
        HTTP_ACCEPT_LANGUAGE=language,
        **htmx(),
    )
    assert response.status_code == 422  # swapped in by htmx (see _base.html)
    assert says in response.content.decode()  # in the reader's language
    own.refresh_from_db()
    assert own.title == "Mine"


def test_rename_without_htmx_has_its_own_page_and_redirects(client, alice, own):
    client.force_login(alice)
    url = reverse("rename_conversation", args=[own.pk])
    page = client.get(url)
    assert page.status_code == 200 and "<html" in page.content.decode()
    response = client.post(url, {"title": "Plain form"})
    assert response.url == own.get_absolute_url()
    own.refresh_from_db()
    assert own.title == "Plain form"


def test_rename_needs_a_csrf_token(alice, own):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(
        reverse("rename_conversation", args=[own.pk]), {"title": "x"}, **htmx()
    )
    assert response.status_code == 403


def test_cancel_returns_the_sidebar_entry(client, alice, own):
    client.force_login(alice)
    response = client.get(reverse("conversation_item", args=[own.pk]), **htmx())
    assert response.status_code == 200
    assert f'id="conversation-item-{own.pk}"' in response.content.decode()


def test_delete_removes_the_conversation_and_its_messages(client, alice, own):
    own.messages.create(role="user", content="hi")
    client.force_login(alice)
    response = client.post(reverse("delete_conversation", args=[own.pk]), **htmx("/"))
    assert response.status_code == 200 and response.content == b""
    assert "HX-Redirect" not in response
    assert not Conversation.objects.exists()
    assert not Message.objects.exists()


def test_deleting_the_open_conversation_sends_the_page_home(client, alice, own):
    client.force_login(alice)
    response = client.post(
        reverse("delete_conversation", args=[own.pk]), **htmx(own.get_absolute_url())
    )
    assert response["HX-Redirect"] == reverse("home")


def test_delete_without_htmx_redirects_home(client, alice, own):
    client.force_login(alice)
    response = client.post(reverse("delete_conversation", args=[own.pk]))
    assert response.url == reverse("home")
    assert not Conversation.objects.exists()


def test_delete_needs_post(client, alice, own):
    client.force_login(alice)
    assert client.get(reverse("delete_conversation", args=[own.pk])).status_code == 405
    assert Conversation.objects.exists()


def test_delete_waits_for_a_running_answer(client, alice, own):
    own.messages.create(role="assistant", status="streaming", content="partial")
    client.force_login(alice)
    response = client.post(reverse("delete_conversation", args=[own.pk]), **htmx())
    assert response.status_code == 409
    assert "stop it first" in response.content.decode()
    assert Conversation.objects.exists()


def test_delete_is_allowed_once_a_streaming_answer_is_orphaned(client, alice, own):
    answer = own.messages.create(role="assistant", status="streaming")
    Message.objects.filter(pk=answer.pk).update(
        updated_at=timezone.now() - timedelta(minutes=1)
    )
    client.force_login(alice)
    response = client.post(reverse("delete_conversation", args=[own.pk]), **htmx())
    assert response.status_code == 200
    assert not Conversation.objects.exists()


def test_message_source_is_the_markdown_as_plain_text(client, alice, own):
    answer = own.messages.create(
        role="assistant", status="done", content="**bold** <b>x</b> é 👋"
    )
    client.force_login(alice)
    response = client.get(reverse("message_source", args=[own.pk, answer.pk]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == "**bold** <b>x</b> é 👋"


def test_finished_answers_carry_a_copy_button(client, alice, own):
    answer = own.messages.create(role="assistant", status="done", content="Hi")
    client.force_login(alice)
    page = client.get(own.get_absolute_url()).content.decode()
    source = reverse("message_source", args=[own.pk, answer.pk])
    assert f'data-source-url="{source}"' in page


@pytest.mark.parametrize(
    ("name", "method", "extra"),
    [
        ("conversation_item", "get", ()),
        ("rename_conversation", "get", ()),
        ("rename_conversation", "post", ()),
        ("delete_conversation", "post", ()),
        ("message_source", "get", ("answer",)),
    ],
)
def test_someone_elses_conversation_cannot_be_touched(
    client, bob, own, name, method, extra
):
    answer = own.messages.create(role="assistant", status="done", content="secret")
    args = [own.pk] + [answer.pk for _ in extra]
    client.force_login(bob)
    response = getattr(client, method)(
        reverse(name, args=args), {"title": "pwned"} if method == "post" else {}
    )
    assert response.status_code == 404
    own.refresh_from_db()
    assert own.title == "Mine"


def test_signed_out_visitors_are_sent_to_sign_in(client, own):
    response = client.post(reverse("delete_conversation", args=[own.pk]))
    assert response.url.startswith(reverse("login"))
    assert Conversation.objects.exists()


def test_a_message_of_another_conversation_is_not_found(client, alice, own, profile):
    other = Conversation.objects.create(owner=alice, model_profile=profile)
    answer = other.messages.create(role="assistant", status="done", content="x")
    client.force_login(alice)
    url = reverse("message_source", args=[own.pk, answer.pk])
    assert client.get(url).status_code == 404
