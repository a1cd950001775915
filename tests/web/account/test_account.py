"""The user page (`/account/`): display name, theme, default model, usage this
period; and the password change of local accounts."""

from __future__ import annotations

import html

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import (
    ApiKey,
    AuditEvent,
    Conversation,
    ExternalAccount,
    ModelProfile,
    SiteDefaults,
    Team,
    UserSettings,
)
from tests.conftest import PASSWORDS
from tests.web.signing_in import fresh_cache, sign_in

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-long-new-password-7"


@pytest.fixture(autouse=True)
def _fresh_cache(settings):
    # Wrong old passwords count as failed sign-ins (chat.accounts.throttle).
    fresh_cache(settings)


def _text(response):
    return html.unescape(response.content.decode())


@pytest.fixture
def big(demo_profile):
    return ModelProfile.objects.create(
        tag="big:70b", display_name="Big", base_url=demo_profile.base_url
    )


def _save(client, **fields):
    data = {"display_name": "", "theme": "system", "default_profile": ""}
    return client.post(reverse("account"), {**data, **fields})


# ---- the page -----------------------------------------------------------------


def test_signed_out_visitors_are_sent_to_sign_in(client):
    for name in ("account", "change_password"):
        response = client.get(reverse(name))
        assert response.status_code == 302 and response.url.startswith("/login/")


def test_the_settings_are_saved_and_shown(alice, alice_client, big):
    response = _save(
        alice_client, display_name="Dr A", theme="dark", default_profile=big.pk
    )
    assert response.status_code == 302 and response.url == reverse("account")
    mine = UserSettings.for_user(alice)
    assert (mine.display_name, mine.theme, mine.default_profile) == (
        "Dr A",
        "dark",
        big,
    )
    page = _text(alice_client.get(reverse("account")))
    assert "Your settings are saved." in page
    assert '<html lang="en" data-theme="dark">' in page
    # The sidebar shows the display name, linked to the page.
    home = _text(alice_client.get(reverse("home")))
    assert (
        '<a class="account-name" href="/account/" title="My account">Dr A</a>' in home
    )


def test_pages_follow_the_system_until_a_theme_is_chosen(alice, alice_client):
    home = _text(alice_client.get(reverse("home")))
    assert 'data-theme="system"' in home and ">alice</a>" in home
    # Reading the defaults stores nothing.
    assert not UserSettings.objects.exists()


def test_a_chosen_theme_picks_the_code_colours_too(alice, alice_client, conversation):
    UserSettings.objects.create(user=alice, theme="light")
    page = _text(alice_client.get(conversation.get_absolute_url()))
    assert 'github.min.css" media="all"' in page
    assert 'github-dark.min.css" media="not all"' in page


def test_an_unknown_theme_is_refused(alice, alice_client):
    response = _save(alice_client, theme="neon")
    assert response.status_code == 422
    assert "Select a valid choice" in _text(response)
    assert not UserSettings.objects.filter(theme="neon").exists()


def test_a_display_name_too_long_is_refused(alice_client):
    response = _save(alice_client, display_name="x" * 151)
    assert response.status_code == 422
    assert "at most 150 characters" in _text(response)


def test_only_usable_models_are_offered_and_accepted(alice, alice_client, big):
    big.enabled = False
    big.save()
    page = _text(alice_client.get(reverse("account")))
    assert "Big" not in page
    assert "The site's default (" in page
    response = _save(alice_client, default_profile=big.pk)
    assert response.status_code == 422
    assert "That model is not one you may use" in _text(response)
    assert UserSettings.for_user(alice).default_profile is None


def test_a_default_model_no_longer_usable_is_pointed_out(alice, alice_client, big):
    UserSettings.objects.create(user=alice, default_profile=big)
    assert "no longer available" not in _text(alice_client.get(reverse("account")))
    big.enabled = False
    big.save()
    page = _text(alice_client.get(reverse("account")))
    assert "Your default model, Big, is no longer available to you" in page


def test_a_model_that_does_not_exist_is_refused(alice_client, big):
    response = _save(alice_client, default_profile=999_999)
    assert response.status_code == 422
    assert "That model is not one you may use" in _text(response)


# ---- the default model: new conversations start with it ----------------------


def test_a_new_conversation_starts_with_my_default_model(alice, alice_client, big):
    UserSettings.objects.create(user=alice, default_profile=big)
    alice_client.post(reverse("new_conversation"))
    assert Conversation.objects.get(owner=alice).model_profile == big


def test_without_a_default_model_the_site_default_is_used(alice, demo_profile, big):
    assert Conversation.start(alice).model_profile == demo_profile


def test_a_disabled_default_model_falls_back_to_the_site_default(
    alice, demo_profile, big
):
    UserSettings.objects.create(user=alice, default_profile=big)
    big.enabled = False
    big.save()
    assert Conversation.start(alice).model_profile == demo_profile


# ---- usage this period -----------------------------------------------------------


def _answers(conversation, *lengths):
    for length in lengths:
        conversation.messages.create(role="user", content="q")
        conversation.messages.create(role="assistant", content="w" * length)


def test_usage_this_period_with_no_limits(alice_client, conversation):
    _answers(conversation, 40, 80)
    page = _text(alice_client.get(reverse("account")))
    assert "Per day (UTC): 2 answers, 30 output tokens." in page
    assert "No limits apply to you." in page


def test_usage_against_my_limits_and_my_team(alice, alice_client, conversation):
    site = SiteDefaults.load()
    site.user_answers = 4
    site.save()
    team = Team.objects.create(name="Research", team_output_tokens=100)
    team.members.add(alice)
    _answers(conversation, 40, 80)
    page = _text(alice_client.get(reverse("account")))
    assert "Yours, answers" in page and "2 of 4" in page
    assert "Team Research, output tokens" in page and "30 of 100" in page
    assert "(reached)" not in page

    _answers(conversation, 4, 4)
    page = _text(alice_client.get(reverse("account")))
    assert "4 of 4" in page and "(reached)" in page


def test_refused_and_failed_answers_do_not_count(alice_client, conversation):
    conversation.messages.create(role="assistant", content="", status="error")
    page = _text(alice_client.get(reverse("account")))
    assert "Per day (UTC): 0 answers, 0 output tokens." in page


# ---- the password ---------------------------------------------------------------


def _change(client, old, new1=NEW_PASSWORD, new2=None):
    return client.post(
        reverse("change_password"),
        {"old_password": old, "new_password1": new1, "new_password2": new2 or new1},
    )


def test_a_local_account_changes_its_password(alice, alice_client):
    assert "Change my password" in _text(alice_client.get(reverse("account")))
    response = _change(alice_client, PASSWORDS["alice"])
    assert response.status_code == 302 and response.url == reverse("account")
    alice.refresh_from_db()
    assert alice.check_password(NEW_PASSWORD)
    # Still signed in, and told.
    page = _text(alice_client.get(reverse("account")))
    assert "Your password is changed." in page
    event = AuditEvent.objects.get(kind=AuditEvent.Kind.PASSWORD_CHANGED)
    assert event.subject == alice and event.actor == alice
    assert event.address == "127.0.0.1"
    fresh = Client()
    assert fresh.login(username="alice", password=NEW_PASSWORD)


def test_changing_the_password_signs_out_the_other_sessions(alice, alice_client):
    elsewhere = Client()
    elsewhere.force_login(alice)
    assert elsewhere.get(reverse("account")).status_code == 200
    assert _change(alice_client, PASSWORDS["alice"]).status_code == 302
    assert elsewhere.get(reverse("account")).status_code == 302
    assert alice_client.get(reverse("account")).status_code == 200


def test_changing_the_password_revokes_the_api_keys_and_says_so(alice, alice_client):
    _, key = ApiKey.issue(alice, "laptop")
    ApiKey.issue(alice, "ci")
    page = _text(alice_client.get(reverse("change_password")))
    assert "A new password revokes your 2 API keys" in page
    assert _change(alice_client, PASSWORDS["alice"]).status_code == 302
    page = _text(alice_client.get(reverse("account")))
    assert "Your 2 API keys were revoked with your old password" in page
    with pytest.raises(ApiKey.Refused, match="revoked"):
        ApiKey.authenticate(key)
    # Nothing more to revoke, nothing more said.
    assert "revokes your" not in _text(alice_client.get(reverse("change_password")))


@pytest.mark.parametrize(
    ("old", "new1", "new2", "error"),
    [
        (
            "wrong-password",
            NEW_PASSWORD,
            None,
            "Your old password was entered incorrectly",
        ),
        (
            PASSWORDS["alice"],
            NEW_PASSWORD,
            NEW_PASSWORD + "x",
            "The two password fields didn",
        ),
        (PASSWORDS["alice"], "short1", None, "This password is too short"),
        (PASSWORDS["alice"], "password123", None, "This password is too common"),
        (PASSWORDS["alice"], "alice@example.org", None, "too similar to the email"),
        (PASSWORDS["alice"], "", None, "This field is required"),
    ],
)
def test_a_bad_password_change_is_refused(alice, alice_client, old, new1, new2, error):
    response = _change(alice_client, old, new1, new2)
    assert response.status_code == 200
    assert error in _text(response)
    alice.refresh_from_db()
    assert alice.check_password(PASSWORDS["alice"])
    assert not AuditEvent.objects.filter(kind=AuditEvent.Kind.PASSWORD_CHANGED).exists()


@pytest.mark.parametrize("kind", ["linked", "unusable"])
def test_provider_accounts_have_no_password_here(alice, alice_client, kind):
    if kind == "linked":
        ExternalAccount.objects.create(user=alice, method="oidc", subject="a-1")
    else:
        alice.set_unusable_password()
        alice.save()
        alice_client.force_login(alice)
    assert "Change my password" not in _text(alice_client.get(reverse("account")))
    assert alice_client.get(reverse("change_password")).status_code == 404
    assert _change(alice_client, PASSWORDS["alice"]).status_code == 404
    alice.refresh_from_db()
    assert not alice.check_password(NEW_PASSWORD)


def test_guessing_the_old_password_is_throttled_like_signing_in(
    alice, alice_client, settings
):
    settings.SIGNIN_FAILURES_PER_USERNAME = 2
    for _ in range(2):
        response = _change(alice_client, "wrong-password")
        assert "Your old password was entered incorrectly" in _text(response)
    # Past the limit even the right password is refused, here and at sign-in.
    response = _change(alice_client, PASSWORDS["alice"])
    assert "Too many failed sign-in attempts. Wait 15 minutes" in _text(response)
    alice.refresh_from_db()
    assert alice.check_password(PASSWORDS["alice"])
    assert sign_in(Client(), "alice", PASSWORDS["alice"]).status_code == 429


def test_a_right_old_password_forgets_the_failures(alice, alice_client, settings):
    settings.SIGNIN_FAILURES_PER_USERNAME = 2
    _change(alice_client, "wrong-password")
    assert _change(alice_client, PASSWORDS["alice"]).status_code == 302
    _change(alice_client, "wrong-password")
    assert (
        _change(alice_client, NEW_PASSWORD, "another-long-password-8").status_code
        == 302
    )


def test_a_model_for_another_team_is_neither_offered_nor_taken(
    alice, alice_client, big
):
    big.teams.add(Team.objects.create(name="GPU"))
    assert "Big" not in _text(alice_client.get(reverse("account")))
    response = _save(alice_client, default_profile=big.pk)
    assert response.status_code == 422
    # Chosen while she was on the team, then she left it: new conversations
    # get the site's model for her, not the team's.
    UserSettings.objects.update_or_create(user=alice, defaults={"default_profile": big})
    alice.refresh_from_db()
    assert Conversation.start(alice).model_profile != big


def test_the_sidebar_theme_select_saves_the_theme(alice, alice_client):
    page = alice_client.get(reverse("home")).content.decode()
    assert 'id="theme-select"' in page and '<option value="system" selected>' in page
    response = alice_client.post(
        reverse("set_theme"), {"theme": "dark"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 204
    assert UserSettings.objects.get(user=alice).theme == "dark"
    page = alice_client.get(reverse("home")).content.decode()
    assert 'data-theme="dark"' in page and '<option value="dark" selected>' in page


def test_without_htmx_the_theme_select_goes_back_to_the_page(alice, alice_client):
    response = alice_client.post(
        reverse("set_theme"), {"theme": "light", "next": "/archived/"}
    )
    assert response.status_code == 302 and response.url == "/archived/"
    response = alice_client.post(
        reverse("set_theme"), {"theme": "light", "next": "https://elsewhere.example/"}
    )
    assert response.url == reverse("home")


def test_the_sidebar_refuses_an_unknown_theme(alice, alice_client):
    response = alice_client.post(reverse("set_theme"), {"theme": "neon"})
    assert response.status_code == 400
    assert not UserSettings.objects.filter(user=alice).exists()
