"""The conversation settings panel (chat.web.conversations.views.conversation_settings,
SettingsForm) and where each effective setting comes from."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import (
    Conversation,
    ModelProfile,
    SettingsChange,
    SiteDefaults,
    turn_rows,
)
from tests.support.settings_forms import shown

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def thinker():
    return ModelProfile.objects.create(
        tag="qwen3:8b",
        base_url="http://127.0.0.1:1",
        supports_thinking=True,
        context_length=8192,
        options={"temperature": 0.6},
    )


@pytest.fixture
def plain():
    return ModelProfile.objects.create(
        tag="llama3.2:3b", base_url="http://127.0.0.1:1", context_length=4096
    )


@pytest.fixture
def own(alice, thinker):
    return Conversation.objects.create(owner=alice, model_profile=thinker)


def url(conversation):
    return reverse("conversation_settings", args=[conversation.pk])


def test_the_panel_shows_each_setting_and_where_it_comes_from(alice_client, own):
    response = alice_client.get(url(own), **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="settings-panel"' in html
    assert "qwen3:8b · set for this conversation" in html
    assert "on · the model&#x27;s default" in html  # thinking: model default
    assert "all messages · the site default" in html
    assert "0.6 · the model&#x27;s default" in html


def test_the_conversation_page_contains_the_panel(alice_client, own):
    html = alice_client.get(own.get_absolute_url()).content.decode()
    assert 'id="settings-panel"' in html and 'id="model-label"' in html


def test_saving_applies_changes_and_notes_them_in_the_conversation(
    alice_client, own, plain
):
    data = shown(
        own,
        model_profile=plain.pk,
        history_policy="last_n",
        history_last_n=4,
        temperature=0.2,
        system_prompt="Answer in French.",
    )
    response = alice_client.post(url(own), data, **HTMX)
    assert response.status_code == 200
    own.refresh_from_db()
    assert own.model_profile == plain
    assert (own.history_policy, own.history_last_n) == ("last_n", 4)
    assert own.temperature == 0.2 and own.system_prompt == "Answer in French."
    change = SettingsChange.objects.get(conversation=own)
    assert change.text == (
        "Settings changed: model → llama3.2:3b, history → last 4 messages, "
        "temperature → 0.2, system prompt → changed"
    )
    html = response.content.decode()
    assert "Saved: applies from the next message." in html
    # The notice goes into the conversation; the header follows the new model.
    assert 'hx-swap-oob="beforebegin:#scroll-sentinel"' in html and change.text in html
    assert 'id="model-label" hx-swap-oob="true"' in html
    assert "llama3.2:3b has no thinking mode" in html
    page = alice_client.get(own.get_absolute_url()).content.decode()
    assert change.text in page


def test_changes_one_after_another_read_as_one_notice_until_a_message(
    alice_client, own, plain
):
    """The panel saves each field as it changes: with nothing asked between
    them, the conversation's last notice is rewritten in its place."""
    alice_client.post(url(own), shown(own, temperature=0.2), **HTMX)
    first = SettingsChange.objects.get()
    own.refresh_from_db()
    response = alice_client.post(url(own), shown(own, model_profile=plain.pk), **HTMX)
    merged = SettingsChange.objects.get()
    assert merged.pk == first.pk
    assert merged.text == ("Settings changed: temperature → 0.2, model → llama3.2:3b")
    html = response.content.decode()
    assert f'id="{merged.dom_id}" role="note" hx-swap-oob="true"' in html
    assert "beforebegin:#scroll-sentinel" not in html
    own.messages.create(role="user", content="Hello")
    own.refresh_from_db()
    alice_client.post(url(own), shown(own, temperature=0.5), **HTMX)
    assert list(SettingsChange.objects.values_list("text", flat=True)) == [
        merged.text,
        "Settings changed: temperature → 0.5",
    ]


def test_saving_nothing_changed_notes_nothing(alice_client, own):
    response = alice_client.post(url(own), shown(own), **HTMX)
    assert response.status_code == 200
    assert not SettingsChange.objects.exists()


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"temperature": "3"}, "temperature", "less than or equal to 2"),
        ({"temperature": "hot"}, "temperature", "Enter a number"),
        (
            {"history_policy": "last_n", "history_last_n": ""},
            "history_last_n",
            "Say how many earlier messages to send.",
        ),
        (
            {"history_policy": "last_n", "history_last_n": "-1"},
            "history_last_n",
            "greater than or equal to 0",
        ),
        ({"history_policy": "sometimes"}, "history_policy", "not one of"),
        ({"thinking": "maybe"}, "thinking", "not one of"),
        ({"model_profile": "99999"}, "model_profile", "not available to you"),
    ],
)
def test_bad_input_is_shown_back_and_nothing_is_saved(
    alice_client, own, changes, field, message
):
    data = shown(own, system_prompt="Keep this text", **changes)
    response = alice_client.post(url(own), data, **HTMX)
    assert response.status_code == 422  # htmx swaps it in (see _base.html)
    html = response.content.decode()
    assert message in html
    assert "Nothing was saved" in html
    # What was typed is still in the form, so nothing typed is lost.
    assert "Keep this text" in html
    own.refresh_from_db()
    assert own.system_prompt == "" and own.temperature is None
    assert not SettingsChange.objects.exists()


def test_a_disabled_model_cannot_be_picked(alice_client, own, plain):
    plain.enabled = False
    plain.save()
    response = alice_client.post(url(own), shown(own, model_profile=plain.pk), **HTMX)
    assert response.status_code == 422
    own.refresh_from_db()
    assert own.model_profile != plain


def test_only_what_was_changed_is_saved(alice_client, own):
    """The header's thinking toggle changed thinking after the panel was shown:
    saving the panel's temperature must not put the old thinking back."""
    data = shown(own, temperature=1.1)  # shown with thinking "default"
    own.thinking = "off"
    own.save()
    response = alice_client.post(url(own), data, **HTMX)
    assert response.status_code == 200
    own.refresh_from_db()
    assert own.thinking == "off" and own.temperature == 1.1


def test_thinking_is_disabled_with_the_reason_for_a_model_that_cannot_think(
    alice_client, alice, plain
):
    conversation = Conversation.objects.create(owner=alice, model_profile=plain)
    html = alice_client.get(url(conversation), **HTMX).content.decode()
    assert 'id="settings-thinking" name="thinking" disabled' in html
    assert "llama3.2:3b has no thinking mode" in html
    data = shown(conversation, temperature=0.5)
    del data["thinking"]  # a disabled select is not posted
    response = alice_client.post(url(conversation), data, **HTMX)
    assert response.status_code == 200
    conversation.refresh_from_db()
    assert conversation.temperature == 0.5 and conversation.thinking == "default"


def test_blank_settings_fall_back_to_the_model_then_the_site(
    alice_client, own, thinker
):
    response = alice_client.post(
        url(own), shown(own, model_profile="", temperature=""), **HTMX
    )
    assert response.status_code == 200
    own.refresh_from_db()
    assert own.model_profile is None
    effective = own.effective_settings()
    assert effective.model.value == thinker and effective.model.level == "site"
    assert effective.temperature.value == 0.6 and effective.temperature.level == "model"


def test_without_htmx_a_save_redirects_and_errors_get_a_page(alice_client, own):
    response = alice_client.post(url(own), shown(own, temperature=0.3))
    assert response.status_code == 302 and response.url == own.get_absolute_url()
    response = alice_client.post(url(own), shown(own, temperature=9))
    assert response.status_code == 422
    assert "<html" in response.content.decode()
    assert alice_client.get(url(own)).status_code == 200


def test_someone_elses_conversation_is_a_404_even_for_staff(
    bob_client, admin_client, own
):
    for client in (bob_client, admin_client):
        assert client.get(url(own), **HTMX).status_code == 404
        response = client.post(url(own), shown(own, temperature=1), **HTMX)
        assert response.status_code == 404
    own.refresh_from_db()
    assert own.temperature is None


def test_anonymous_visitors_are_sent_to_sign_in(client, own):
    response = client.post(url(own), shown(own, temperature=1))
    assert response.status_code == 302 and reverse("login") in response.url


def test_saving_needs_a_csrf_token(alice, own):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(url(own), shown(own, temperature=1), **HTMX)
    assert response.status_code == 403
    own.refresh_from_db()
    assert own.temperature is None
    page = client.get(own.get_absolute_url())
    token = page.cookies["csrftoken"].value
    response = client.post(
        url(own), shown(own, temperature=1), HTTP_X_CSRFTOKEN=token, **HTMX
    )
    assert response.status_code == 200


def test_the_header_thinking_toggle_also_leaves_a_notice(alice_client, own):
    response = alice_client.post(
        reverse("set_thinking", args=[own.pk]), {"thinking": "off"}, **HTMX
    )
    assert response.status_code == 200
    change = SettingsChange.objects.get()
    assert change.text == "Settings changed: thinking → off"
    assert change.text in response.content.decode()


# Effective values: conversation → model → site.


def test_site_defaults_give_new_conversations_their_model_and_thinking(
    alice_client, alice, thinker, plain
):
    site = SiteDefaults.load()
    site.default_profile, site.default_thinking = plain, "off"
    site.save()
    alice_client.post(reverse("new_conversation"))
    conversation = Conversation.objects.get(owner=alice)
    assert conversation.model_profile == plain and conversation.thinking == "off"


def test_a_disabled_site_default_model_falls_back_to_the_first_enabled(
    alice, thinker, plain
):
    site = SiteDefaults.load()
    site.default_profile = plain
    site.save()
    plain.enabled = False
    plain.save()
    conversation = Conversation.start(alice)
    assert conversation.model_profile == thinker


def test_thinking_level_and_value(alice, thinker, plain):
    conversation = Conversation(owner=alice, thinking="default")
    assert conversation.effective_thinking(thinker).value is True
    assert conversation.effective_thinking(thinker).level == "model"
    conversation.thinking = "off"
    assert conversation.effective_thinking(thinker).value is False
    assert conversation.effective_thinking(thinker).level == "conversation"
    assert conversation.effective_thinking(plain).value is None


def test_the_conversations_temperature_is_sent_on_top_of_the_models(own, thinker):
    assert own.request_options(thinker) == {"temperature": 0.6, "num_ctx": 8192}
    own.temperature = 0.0
    assert own.request_options(thinker) == {"temperature": 0.0, "num_ctx": 8192}


def test_a_conversation_on_the_site_default_keeps_following_it(alice, thinker, plain):
    conversation = Conversation.objects.create(owner=alice, model_profile=None)
    assert turn_rows.begin_turn(conversation, "hello").profile == thinker
    conversation.messages.filter(status="streaming").update(status="done")
    site = SiteDefaults.load()
    site.default_profile = plain
    site.save()
    conversation.refresh_from_db()
    assert turn_rows.begin_turn(conversation, "again").profile == plain


def test_a_disabled_model_is_replaced_by_the_one_that_answers(alice, thinker, plain):
    conversation = Conversation.objects.create(owner=alice, model_profile=plain)
    plain.enabled = False
    plain.save()
    conversation.refresh_from_db()
    assert conversation.effective_model().level == "site"
    assert turn_rows.begin_turn(conversation, "hello").profile == thinker
    conversation.refresh_from_db()
    assert conversation.model_profile == thinker


def test_the_panel_says_when_no_model_is_set_up(alice_client, alice):
    conversation = Conversation.objects.create(owner=alice)
    response = alice_client.get(url(conversation), **HTMX)
    assert response.status_code == 200
    assert "No model is set up" in response.content.decode()
    page = alice_client.get(conversation.get_absolute_url()).content.decode()
    assert 'id="settings-panel"' not in page
