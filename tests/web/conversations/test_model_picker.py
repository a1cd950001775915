"""The composer's model picker: only the models the user may use, with their
facts; which are loaded, from the server probe (cached); the home page's choice
of model for the new conversation."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from chat.models import Conversation, ModelProfile, Team
from chat.web.conversations.model_picker import LOADED_CACHE_KEY

pytestmark = pytest.mark.django_db


@pytest.fixture
def small():
    return ModelProfile.objects.create(
        tag="small:1b",
        base_url="http://127.0.0.1:1",
        parameter_size="1.2B",
        quantization="Q8_0",
        supports_thinking=True,
    )


@pytest.fixture
def big(alice):
    profile = ModelProfile.objects.create(
        tag="big:70b", display_name="Big", base_url="http://127.0.0.1:1/"
    )
    team = Team.objects.create(name="GPU")
    team.members.add(alice)
    profile.teams.add(team)
    return profile


@pytest.fixture(autouse=True)
def _no_cached_probe():
    cache.delete(LOADED_CACHE_KEY)
    yield
    cache.delete(LOADED_CACHE_KEY)


def test_the_picker_offers_only_the_users_models_with_their_facts(
    bob_client, small, big
):
    page = bob_client.get(reverse("home")).content.decode()
    assert f'id="model-option-{small.pk}"' in page
    assert f'id="model-option-{big.pk}"' not in page
    assert ">1.2B<" in page and ">Q8_0<" in page and ">thinking<" in page


def test_loaded_models_come_from_the_cached_probe(alice_client, bob_client, small, big):
    cache.set(LOADED_CACHE_KEY, {"http://127.0.0.1:1": ["big:70b", "small:1b"]})
    response = alice_client.get(reverse("loaded_models"))
    assert sorted(response.json()["loaded"]) == sorted([small.pk, big.pk])
    # Another team's model is not named to someone who may not use it.
    assert bob_client.get(reverse("loaded_models")).json() == {"loaded": [small.pk]}


def test_an_unreachable_server_has_nothing_loaded(alice_client, small):
    assert alice_client.get(reverse("loaded_models")).json() == {"loaded": []}
    assert cache.get(LOADED_CACHE_KEY) == {"http://127.0.0.1:1": []}


def test_loaded_models_need_signing_in(client, small):
    assert client.get(reverse("loaded_models")).status_code == 302


def test_the_home_page_starts_the_conversation_with_the_chosen_model(
    alice_client, small, big
):
    response = alice_client.post(
        reverse("new_conversation"), {"content": "Hi", "model": big.pk}
    )
    assert response.status_code == 302
    assert Conversation.objects.get().model_profile == big


def test_a_model_the_user_may_not_use_is_refused_and_the_text_kept(
    bob_client, small, big
):
    response = bob_client.post(
        reverse("new_conversation"), {"content": "Keep me", "model": big.pk}
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert "That model is not available to you" in page
    assert ">\nKeep me</textarea>" in page
    assert not Conversation.objects.exists()
