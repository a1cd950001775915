"""The first visit, the home page's composer, a new conversation and its
page, the thinking toggle."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from chat.models import Conversation, Message

pytestmark = pytest.mark.django_db


def test_first_visit_with_no_users_offers_to_create_the_admin(client):
    response = client.get("/")
    assert response.status_code == 302 and response.url == reverse("setup")
    response = client.post(
        reverse("setup"),
        {
            "username": "root",
            "password1": "a-long-pass-phrase-9",
            "password2": "a-long-pass-phrase-9",
        },
    )
    assert response.status_code == 302
    user = get_user_model().objects.get()
    assert user.is_superuser and user.is_staff
    assert client.get("/").status_code == 200


def test_setup_is_closed_once_a_user_exists(client, alice):
    assert client.get(reverse("setup")).url == reverse("home")


def test_setup_form_errors_are_shown(client):
    response = client.post(
        reverse("setup"), {"username": "root", "password1": "a", "password2": "b"}
    )
    assert response.status_code == 200
    assert not get_user_model().objects.exists()


def test_anonymous_visitors_are_sent_to_sign_in(client, alice, own):
    assert client.get("/").url == reverse("login")
    assert client.get(own.get_absolute_url()).url.startswith(reverse("login"))


def test_sign_in_page_works(client, alice):
    response = client.post(
        reverse("login"), {"username": "alice", "password": "password-alice-123"}
    )
    assert response.status_code == 302


def test_new_conversation_uses_the_default_model(client, alice, profile):
    client.force_login(alice)
    response = client.post(reverse("new_conversation"))
    conversation = Conversation.objects.get()
    assert response.url == conversation.get_absolute_url()
    assert conversation.model_profile == profile and conversation.owner == alice


def test_new_conversation_needs_post(client, alice):
    client.force_login(alice)
    assert client.get(reverse("new_conversation")).status_code == 405


def test_the_home_page_is_a_composer(client, alice, profile):
    client.force_login(alice)
    page = client.get("/").content.decode()
    assert 'id="home-composer"' in page and 'name="content"' in page
    assert f'action="{reverse("new_conversation")}"' in page


def test_a_question_from_home_goes_to_its_new_conversation_page(client, alice, profile):
    client.force_login(alice)
    response = client.post(reverse("new_conversation"), {"content": "\nHello <b>"})
    conversation = Conversation.objects.get()
    assert response.url == conversation.get_absolute_url()
    assert not conversation.messages.exists()  # the page sends it, over its socket
    page = client.get(response.url).content.decode()
    assert 'data-first-question="\nHello &lt;b&gt;"' in page
    carried = client.session["chat.first_question"]
    assert f'data-first-client-id="{carried["client_id"]}"' in page
    # Until it is stored, a reload carries it again; then never again.
    assert "data-first-question" in client.get(response.url).content.decode()
    conversation.messages.create(
        role=Message.Role.USER, content="\nHello <b>", client_id=carried["client_id"]
    )
    assert "data-first-question" not in client.get(response.url).content.decode()
    assert "chat.first_question" not in client.session


def test_the_home_question_is_only_for_its_own_conversation(client, alice, own):
    own.messages.create(role=Message.Role.USER, content="Earlier")
    client.force_login(alice)
    response = client.post(reverse("new_conversation"), {"content": "Hi"})
    assert response.url != own.get_absolute_url()
    assert (
        "data-first-question" not in client.get(own.get_absolute_url()).content.decode()
    )


def test_a_blank_question_from_home_only_opens_a_conversation(client, alice, profile):
    client.force_login(alice)
    response = client.post(reverse("new_conversation"), {"content": "  "})
    assert response.status_code == 302
    assert "chat.first_question" not in client.session


def test_a_too_long_question_from_home_stays_in_its_field(
    client, alice, profile, settings
):
    client.force_login(alice)
    settings.MESSAGE_MAX_CHARS = 5
    response = client.post(reverse("new_conversation"), {"content": "too long"})
    assert response.status_code == 422
    page = response.content.decode()
    assert ">\ntoo long</textarea>" in page and 'id="home-error"' in page
    assert not Conversation.objects.exists()


def test_conversation_page_shows_messages_and_marks_the_demo(client, alice, own):
    own.messages.create(role="user", content="<b>hi</b>")
    own.messages.create(
        role="assistant",
        content="**bold** answer",
        thinking="hmm",
        thinking_ms=2500,
        status="done",
    )
    client.force_login(alice)
    page = client.get(own.get_absolute_url()).content.decode()
    assert "&lt;b&gt;hi&lt;/b&gt;" in page
    assert "<strong>bold</strong> answer" in page
    assert "Thought for 2.5 s" in page
    assert "demo model" in page
    assert f'data-ws-path="/ws/conversations/{own.pk}/"' in page


def test_streaming_answer_renders_its_partial_text_and_offsets(client, alice, own):
    own.messages.create(
        role="assistant", content="héllo 👋", thinking="ab", status="streaming"
    )
    client.force_login(alice)
    page = client.get(own.get_absolute_url()).content.decode()
    assert 'data-status="streaming"' in page
    assert 'data-content-length="7"' in page and 'data-thinking-length="2"' in page
    assert '<div class="answer streaming">héllo 👋</div>' in page


def test_someone_elses_conversation_is_not_found(client, bob, own):
    client.force_login(bob)
    assert client.get(own.get_absolute_url()).status_code == 404
    assert (
        client.post(
            reverse("set_thinking", args=[own.pk]), {"thinking": "off"}
        ).status_code
        == 404
    )


def test_sidebar_lists_only_my_conversations(client, alice, bob, own):
    bobs = Conversation.objects.create(owner=bob, title="Bobs secret")
    for conversation in (own, bobs):  # (one that never got a message is not listed)
        conversation.messages.create(role="user", content="hello")
    client.force_login(alice)
    page = client.get("/").content.decode()
    assert "Mine" in page and "Bobs secret" not in page


def test_thinking_toggle_saves_and_returns_the_partial(client, alice, own):
    client.force_login(alice)
    response = client.post(
        reverse("set_thinking", args=[own.pk]),
        {"thinking": "off"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert [t.name for t in response.templates][0] == "chat/_thinking_toggle.html"
    own.refresh_from_db()
    assert own.thinking == "off"


def test_thinking_toggle_without_htmx_redirects_back(client, alice, own):
    client.force_login(alice)
    response = client.post(reverse("set_thinking", args=[own.pk]), {"thinking": "on"})
    assert response.url == own.get_absolute_url()


def test_thinking_toggle_rejects_unknown_values(client, alice, own):
    client.force_login(alice)
    response = client.post(
        reverse("set_thinking", args=[own.pk]),
        {"thinking": "maybe"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 400
    own.refresh_from_db()
    assert own.thinking == "default"


def test_thinking_toggle_is_disabled_for_a_model_without_thinking(
    client, alice, own, profile
):
    profile.supports_thinking = False
    profile.save()
    client.force_login(alice)
    page = client.get(own.get_absolute_url()).content.decode()
    assert 'name="thinking" disabled' in page
    assert "has no thinking mode" in page


def test_home_says_when_no_model_is_set_up(client, admin_user):
    client.force_login(admin_user)
    page = client.get("/").content.decode()
    assert "No model is set up yet" in page
    assert reverse("admin:chat_modelprofile_changelist") in page
