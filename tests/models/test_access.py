"""Per-model access: a profile limited to teams is for their members only, is
offered to nobody else, and a conversation whose model became forbidden says so
instead of answering with another one."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import AnonymousUser
from django.urls import reverse

from chat.models import (
    Conversation,
    Message,
    ModelProfile,
    SiteDefaults,
    Team,
    turn_rows,
)
from tests.support.settings_forms import shown

pytestmark = pytest.mark.django_db


def make_profile(tag: str, **fields) -> ModelProfile:
    return ModelProfile.objects.create(
        tag=tag, base_url="http://gpu-box:11434", **fields
    )


@pytest.fixture
def gpu_team(alice) -> Team:
    team = Team.objects.create(name="GPU")
    team.members.add(alice)
    return team


@pytest.fixture
def small() -> ModelProfile:
    return make_profile("small:1b")


@pytest.fixture
def big(gpu_team) -> ModelProfile:
    profile = make_profile("big:70b", display_name="Big")
    profile.teams.add(gpu_team)
    return profile


def test_a_profile_without_teams_is_for_everyone(alice, bob, small):
    assert small.allowed_for(alice) and small.allowed_for(bob)
    assert small.allowed_for(AnonymousUser())
    assert list(ModelProfile.objects.usable_by(bob)) == [small]


def test_a_profile_limited_to_a_team_is_for_its_members_only(alice, bob, small, big):
    assert big.allowed_for(alice)
    assert not big.allowed_for(bob)
    assert not big.allowed_for(AnonymousUser())
    assert set(ModelProfile.objects.usable_by(alice)) == {small, big}
    assert list(ModelProfile.objects.usable_by(bob)) == [small]
    assert list(ModelProfile.objects.usable_by(AnonymousUser())) == [small]


def test_a_member_of_another_team_may_not_use_it(bob, big):
    Team.objects.create(name="Other").members.add(bob)
    assert not big.allowed_for(bob)
    assert not ModelProfile.objects.usable_by(bob).filter(pk=big.pk).exists()


def test_a_profile_on_two_teams_is_listed_once(alice, big):
    other = Team.objects.create(name="Other")
    other.members.add(alice)
    big.teams.add(other)
    assert list(ModelProfile.objects.usable_by(alice)) == [big]


def test_disabled_profiles_are_never_usable(alice, small):
    small.enabled = False
    small.save()
    assert not ModelProfile.objects.usable_by(alice).exists()


def test_a_forbidden_conversation_model_is_refused_not_replaced(bob, small, big):
    conversation = Conversation.objects.create(owner=bob, model_profile=big)
    with pytest.raises(Conversation.ModelForbidden, match="Big is not available"):
        conversation.effective_model()
    with pytest.raises(Conversation.ModelForbidden):
        turn_rows.begin_turn(conversation, "Hello")
    assert not Message.objects.exists()
    assert Conversation.next_model(conversation.pk) is None  # nothing preloaded


def test_a_model_becomes_forbidden_when_its_user_leaves_the_team(alice, big, gpu_team):
    conversation = Conversation.objects.create(owner=alice, model_profile=big)
    assert conversation.effective_model().value == big
    gpu_team.members.remove(alice)
    conversation = Conversation.objects.get(pk=conversation.pk)
    with pytest.raises(Conversation.ModelForbidden):
        conversation.effective_model()


def test_a_retry_with_a_forbidden_model_changes_nothing(alice, big, gpu_team):
    conversation = Conversation.objects.create(owner=alice, model_profile=big)
    turn = turn_rows.begin_turn(conversation, "Hello")
    turn.answer.status = Message.Status.DONE
    turn.answer.save()
    gpu_team.members.remove(alice)
    conversation = Conversation.objects.get(pk=conversation.pk)
    with pytest.raises(Conversation.ModelForbidden):
        turn_rows.begin_regenerate(conversation)
    with pytest.raises(Conversation.ModelForbidden):
        turn_rows.begin_edit(conversation, turn.question.pk, "Changed")
    assert conversation.messages.count() == 2
    assert not conversation.messages.filter(replaced=True).exists()


def test_the_site_default_for_some_teams_gives_others_the_first_they_may_use(
    bob, small, big
):
    site = SiteDefaults.load()
    site.default_profile = big
    site.save()
    following = Conversation.objects.create(owner=bob)
    assert following.effective_model().value == small
    assert Conversation.start(bob).model_profile == small
    assert Conversation.site_model_for(bob) == small


def test_no_model_open_to_the_user_is_a_clear_refusal(bob, big):
    conversation = Conversation.objects.create(owner=bob)
    with pytest.raises(Conversation.ModelForbidden, match="None of the models"):
        conversation.effective_model()
    assert Conversation.start(bob).model_profile is None


def test_a_team_member_starts_with_the_site_default(alice, small, big):
    site = SiteDefaults.load()
    site.default_profile = big
    site.save()
    assert Conversation.start(alice).model_profile == big


# The pages: only allowed models are offered; one named anyway is refused.


def settings_url(conversation: Conversation) -> str:
    return reverse("conversation_settings", args=[conversation.pk])


def test_the_settings_form_offers_only_allowed_models(bob_client, bob, small, big):
    conversation = Conversation.objects.create(owner=bob, model_profile=small)
    html = bob_client.get(settings_url(conversation)).content.decode()
    assert "small:1b" in html
    assert not re.search(r"\bBig\b", html)  # as a word: not in a CSRF token
    assert "big:70b" not in html


def test_the_settings_form_offers_a_member_the_teams_model(
    alice_client, alice, small, big
):
    conversation = Conversation.objects.create(owner=alice, model_profile=small)
    html = alice_client.get(settings_url(conversation)).content.decode()
    assert f'value="{big.pk}"' in html


def test_naming_a_forbidden_model_in_the_form_is_refused(bob_client, bob, small, big):
    conversation = Conversation.objects.create(owner=bob, model_profile=small)
    data = shown(conversation, model_profile=big.pk)
    response = bob_client.post(settings_url(conversation), data)
    assert response.status_code == 422
    assert "That model is not available to you" in response.content.decode()
    conversation.refresh_from_db()
    assert conversation.model_profile == small


def test_a_conversation_whose_model_became_forbidden_says_so_and_offers_others(
    bob_client, bob, small, big
):
    conversation = Conversation.objects.create(owner=bob, model_profile=big)
    response = bob_client.get(conversation.get_absolute_url())
    html = response.content.decode()
    assert response.status_code == 200
    assert "Big is not available to you any more" in html
    assert "You may use: small:1b." in html
    assert 'id="settings-drawer" open' in html
    assert f'<option value="{small.pk}"' in html
    assert f'<option value="{big.pk}"' not in html
    # Choosing an allowed one clears it.
    data = shown(conversation, model_profile=small.pk)
    response = bob_client.post(settings_url(conversation), data)
    assert response.status_code == 302
    html = bob_client.get(conversation.get_absolute_url()).content.decode()
    assert "not available to you" not in html


def test_the_home_page_names_the_model_the_user_gets(bob_client, small, big):
    site = SiteDefaults.load()
    site.default_profile = big
    site.save()
    html = bob_client.get(reverse("home")).content.decode()
    assert "<strong>small:1b</strong>" in html
    # As a word: the page's random CSRF token once held the letters "Big".
    assert not re.search(r"\bBig\b", html)
    assert "big:70b" not in html


def test_a_user_with_no_model_open_to_them_is_told_so(bob_client, bob, big):
    response = bob_client.post(reverse("new_conversation"))
    html = bob_client.get(response.url).content.decode()
    assert "None of the models is available to you" in html
    assert "You may use" not in html
    assert "Model not available to you" in html  # the header's model label
