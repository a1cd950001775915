"""The user page's API keys (chat.web.account.api_keys, templates/chat/_api_keys.html):
made with a name, an expiry, models and stored answers, shown once, listed
with their use, revoked; and what the page says when the site's API is closed."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from chat.models import ApiKey, AuditEvent, Membership, ModelProfile, SiteDefaults, Team

pytestmark = pytest.mark.django_db

CREATE = reverse("create_api_key")
HTMX = {"HTTP_HX_REQUEST": "true"}
SHOWN_KEY = re.compile(r'id="new-api-key"[^>]* value="(csk-[^"]+)"')
Kind = AuditEvent.Kind


def revoke_url(api_key: ApiKey) -> str:
    return reverse("revoke_api_key", args=[api_key.pk])


def text(response) -> str:
    return html.unescape(response.content.decode())


def create(client, headers=None, **fields):
    data = {"name": "laptop", "expiry": "90d", **fields}
    return client.post(CREATE, data, REMOTE_ADDR="192.0.2.3", **(headers or {}))


def shown_key(response) -> str:
    [key] = SHOWN_KEY.findall(response.content.decode())
    return key


def section(response) -> str:
    """The API keys section of the page."""
    return text(response).split('id="api-keys"')[1].split("</section>")[0]


def templates(response) -> list[str]:
    return [t.name for t in response.templates if t.name.startswith("chat/")]


def refused(response, status: int, message: str) -> None:
    assert response.status_code == status
    assert message in text(response)
    assert not ApiKey.objects.exists()


@pytest.fixture
def gpu_team():
    return Team.objects.create(name="GPU")


@pytest.fixture
def gpu_only(demo_profile, gpu_team):
    """A model only the GPU team may use (no one is on it yet)."""
    profile = ModelProfile.objects.create(
        tag="gpu:120b", display_name="GPU model", base_url=demo_profile.base_url
    )
    profile.teams.add(gpu_team)
    return profile


def set_api(*, enabled: bool = True, teams: list[Team] = ()) -> None:
    site = SiteDefaults.load()
    site.api_enabled = enabled
    site.save()
    site.api_teams.set(teams)


# ---- making a key ---------------------------------------------------------------


def test_the_page_offers_a_new_key_with_only_my_models(alice_client, gpu_only):
    page = section(alice_client.get(reverse("account")))
    assert "No keys yet." in page and f'action="{CREATE}"' in page
    assert 'type="checkbox" name="profiles"' in page
    assert "qwen3-demo:8b" in page and "GPU model" not in page


def test_a_new_key_is_shown_once_and_only_its_digest_is_stored(alice, alice_client):
    response = create(alice_client)
    assert response.status_code == 200
    assert "no-cache" in response["Cache-Control"]
    assert "chat/account.html" in templates(response)  # the whole page, no htmx
    key = shown_key(response)
    api_key = ApiKey.objects.get(user=alice)
    assert ApiKey.authenticate(key) == api_key
    stored = [str(getattr(api_key, f.attname)) for f in ApiKey._meta.concrete_fields]
    assert not any(key in value for value in stored)
    assert api_key.name == "laptop" and api_key.shown == key[:10]
    # A reload shows the key's beginning, never the key.
    again = text(alice_client.get(reverse("account")))
    assert key not in again and f"{key[:10]}…" in again


def test_making_a_key_is_audited_with_the_client_address(alice, alice_client):
    create(alice_client)
    event = AuditEvent.objects.get(kind=Kind.API_KEY_CREATED)
    assert (event.actor, event.subject, event.address) == (alice, alice, "192.0.2.3")
    assert event.detail["key"] == "laptop"


def test_the_new_key_comes_with_how_to_use_it(alice_client, demo_profile):
    response = create(alice_client)
    key, page = shown_key(response), text(response)
    assert 'class="copy-api-key" data-copies="new-api-key"' in page
    assert "base URL <code>http://testserver/v1</code>" in page
    assert "host <code>http://testserver</code>" in page
    assert "curl http://testserver/v1/chat/completions" in page
    assert f'-H "Authorization: Bearer {key}"' in page
    assert '"model": "qwen3-demo:8b"' in page


def test_with_htmx_the_section_alone_is_answered(alice_client):
    response = create(alice_client, headers=HTMX)
    assert response.status_code == 200
    assert templates(response) == ["chat/_api_keys.html"]
    page = text(response)
    assert page.lstrip().startswith('<section id="api-keys"')
    assert shown_key(response).startswith("csk-")


def test_the_expiry_choices(alice, alice_client):
    create(alice_client, name="month", expiry="30d")
    create(alice_client, name="forever", expiry="never")
    day = (timezone.now() + timedelta(days=3)).date()
    create(alice_client, name="dated", expiry="date", expires_on=day.isoformat())
    expiry = dict(ApiKey.objects.values_list("name", "expires_at"))
    assert abs(expiry["month"] - timezone.now() - timedelta(days=30)) < timedelta(
        minutes=1
    )
    assert expiry["forever"] is None
    assert expiry["dated"] == datetime(day.year, day.month, day.day, tzinfo=UTC)


def test_a_key_restricted_to_some_models_that_keeps_its_answers(
    alice, alice_client, demo_profile
):
    other = ModelProfile.objects.create(tag="big:70b", base_url=demo_profile.base_url)
    create(alice_client, profiles=[other.pk], store_conversations="on")
    api_key = ApiKey.objects.get()
    assert list(api_key.profiles.all()) == [other] and api_key.store_conversations
    assert AuditEvent.objects.get(kind=Kind.API_KEY_CREATED).detail["models"] == [
        "big:70b"
    ]


# ---- bad input: no key is made ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Give the key a name"),
        ("   ", "Give the key a name"),
        ("x" * 101, "at most 100 characters"),
    ],
)
def test_a_key_needs_a_name_of_at_most_100_characters(alice_client, name, message):
    refused(create(alice_client, name=name), 422, message)


def test_a_key_cannot_expire_in_the_past_or_today(alice_client):
    for day in (timezone.now().date(), timezone.now().date() - timedelta(days=1)):
        response = create(alice_client, expiry="date", expires_on=day.isoformat())
        refused(response, 422, "Pick a date after today")


def test_an_expiry_on_a_date_needs_the_date(alice_client):
    refused(create(alice_client, expiry="date"), 422, "Pick the date the key expires")


def test_an_unknown_expiry_choice_is_refused(alice_client):
    refused(create(alice_client, expiry="1000y"), 422, "Select a valid choice")


def test_a_model_i_may_not_use_is_refused(alice_client, gpu_only):
    refused(
        create(alice_client, profiles=[gpu_only.pk]),
        422,
        "That model is not one you may use",
    )
    refused(create(alice_client, profiles=["999999"]), 422, "That model is not one you")


def test_with_htmx_the_errors_come_back_in_the_section(alice_client):
    response = create(alice_client, headers=HTMX, name="")
    assert templates(response) == ["chat/_api_keys.html"]
    refused(response, 422, "Give the key a name")


# ---- the list -------------------------------------------------------------------


def test_my_keys_are_listed_with_their_use_and_state(
    alice, bob, alice_client, demo_profile
):
    used, key = ApiKey.issue(alice, "used one", profiles=[demo_profile])
    ApiKey.authenticate(key, "192.0.2.44")
    ApiKey.issue(alice, "unused one", store_conversations=True)
    ApiKey.issue(alice, "old one", expires_at=timezone.now() - timedelta(days=1))
    ApiKey.issue(bob, "bob's own")
    page = text(alice_client.get(reverse("account")))
    rows = {
        api_key.name: page.split(f'id="api-key-{api_key.pk}"')[1].split("</tr>")[0]
        for api_key in ApiKey.objects.filter(user=alice)
    }
    assert "bob's own" not in page
    assert "from 192.0.2.44" in rows["used one"]
    assert (
        "qwen3-demo:8b" in rows["used one"] and "answers not listed" in rows["used one"]
    )
    assert "never" in rows["unused one"] and "all your models" in rows["unused one"]
    assert "answers kept as conversations" in rows["unused one"]
    assert "Expired" in rows["old one"] and "Revoke" not in rows["old one"]
    assert "Active" in rows["used one"] and revoke_url(used) in rows["used one"]


# ---- revoking -------------------------------------------------------------------


def test_revoking_my_key_refuses_it_and_is_audited(alice, alice_client):
    api_key, key = ApiKey.issue(alice, "laptop")
    response = alice_client.post(revoke_url(api_key), REMOTE_ADDR="192.0.2.8")
    assert response.status_code == 302 and response.url == reverse("account")
    page = text(alice_client.get(reverse("account")))
    assert "“laptop” is revoked" in page and "Revoked" in page
    with pytest.raises(ApiKey.Refused):
        ApiKey.authenticate(key)
    event = AuditEvent.objects.get(kind=Kind.API_KEY_REVOKED)
    assert (event.actor, event.subject, event.address) == (alice, alice, "192.0.2.8")


def test_revoking_with_htmx_answers_the_section(alice, alice_client):
    api_key, _ = ApiKey.issue(alice, "laptop")
    response = alice_client.post(revoke_url(api_key), **HTMX)
    assert response.status_code == 200
    assert templates(response) == ["chat/_api_keys.html"]
    assert "“laptop” is revoked" in text(response)
    assert 'hx-confirm="Revoke' not in text(response)  # nothing left to revoke


def test_revoking_twice_is_harmless(alice, alice_client):
    api_key, _ = ApiKey.issue(alice, "laptop")
    alice_client.post(revoke_url(api_key))
    response = alice_client.post(revoke_url(api_key), **HTMX)
    assert response.status_code == 200 and "was already revoked" in text(response)
    assert AuditEvent.objects.filter(kind=Kind.API_KEY_REVOKED).count() == 1


def test_someone_elses_key_is_not_found(bob, alice_client):
    api_key, key = ApiKey.issue(bob, "bob's")
    assert alice_client.post(revoke_url(api_key)).status_code == 404
    assert ApiKey.authenticate(key) == api_key
    assert alice_client.post(reverse("revoke_api_key", args=[9999])).status_code == 404


def test_the_forms_take_only_posts(alice, alice_client):
    api_key, _ = ApiKey.issue(alice, "laptop")
    assert alice_client.get(CREATE).status_code == 405
    assert alice_client.get(revoke_url(api_key)).status_code == 405
    api_key.refresh_from_db()
    assert api_key.state == "active" and ApiKey.objects.count() == 1


def test_signed_out_visitors_are_sent_to_sign_in(client, alice):
    api_key, _ = ApiKey.issue(alice, "laptop")
    for url in (CREATE, revoke_url(api_key)):
        response = client.post(url, {"name": "x", "expiry": "never"})
        assert response.status_code == 302 and response.url.startswith("/login/")
    assert ApiKey.objects.get().state == "active"


# ---- the site's API closed ---------------------------------------------------------


def test_with_the_api_off_the_page_says_so_and_offers_no_new_key(alice, alice_client):
    api_key, _ = ApiKey.issue(alice, "laptop")
    set_api(enabled=False)
    page = text(alice_client.get(reverse("account")))
    assert "API access is switched off on this site" in page
    assert f'action="{CREATE}"' not in page
    # Existing keys stay listed and revocable.
    assert revoke_url(api_key) in page
    assert alice_client.post(revoke_url(api_key)).status_code == 302
    api_key.refresh_from_db()
    assert api_key.state == "revoked"


def test_with_the_api_off_a_form_loaded_before_makes_no_key(alice_client):
    set_api(enabled=False)
    refused(create(alice_client), 403, "API access is switched off")
    refused(create(alice_client, headers=HTMX), 403, "API access is switched off")


def test_an_api_for_other_teams_is_closed_to_me(alice, alice_client, gpu_team):
    set_api(teams=[gpu_team])
    page = text(alice_client.get(reverse("account")))
    assert "open to members of some teams only" in page
    assert f'action="{CREATE}"' not in page
    refused(create(alice_client), 403, "open to members of some teams only")

    Membership.objects.create(team=gpu_team, user=alice)
    page = text(alice_client.get(reverse("account")))
    assert "some teams only" not in page and f'action="{CREATE}"' in page
    assert create(alice_client).status_code == 200
