"""Personal API keys (chat.models.api_keys): made and shown once, stored as a
digest, refused with the reason, their use noted sparingly, their models."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone

from chat.models import ApiKey, AuditEvent, Membership, ModelProfile, SiteDefaults, Team
from chat.models.api_keys import api_access_for
from tests.conftest import PASSWORDS

pytestmark = pytest.mark.django_db

Refused = ApiKey.Refused


@pytest.fixture
def gpu_team(alice):
    team = Team.objects.create(name="GPU")
    Membership.objects.create(team=team, user=alice)
    return team


@pytest.fixture
def big(demo_profile):
    return ModelProfile.objects.create(
        tag="big:70b", display_name="Big", base_url=demo_profile.base_url
    )


@pytest.fixture
def gpu_only(demo_profile, gpu_team):
    profile = ModelProfile.objects.create(
        tag="gpu:120b", base_url=demo_profile.base_url
    )
    profile.teams.add(gpu_team)
    return profile


def stored_values(api_key: ApiKey) -> list[str]:
    api_key.refresh_from_db()
    return [str(getattr(api_key, f.attname)) for f in ApiKey._meta.concrete_fields]


def ago(**delta) -> object:
    return timezone.now() - timedelta(**delta)


# ---- issuing ------------------------------------------------------------------


def test_a_key_is_returned_once_and_only_its_digest_is_stored(alice):
    api_key, key = ApiKey.issue(alice, "  laptop  ")
    assert key.startswith("csk-") and len(key) >= 4 + 43  # 256 random bits
    assert not any(key in value for value in stored_values(api_key))
    assert api_key.digest == hashlib.sha256(key.encode()).hexdigest()
    assert api_key.shown == key[:10] and str(api_key) == f"laptop ({key[:10]}…)"
    assert api_key.name == "laptop"
    assert ApiKey.authenticate(key) == api_key


def test_every_key_is_a_new_one(alice):
    keys = {ApiKey.issue(alice, "k")[1] for _ in range(20)}
    assert len(keys) == 20
    assert len({key[:10] for key in keys}) > 1


def test_making_a_key_is_audited_with_what_it_allows(alice, big):
    expires = timezone.now() + timedelta(days=30)
    api_key, _ = ApiKey.issue(
        alice,
        "report",
        expires_at=expires,
        profiles=[big],
        store_conversations=True,
        address="192.0.2.7",
    )
    event = AuditEvent.objects.get()
    assert (event.kind, event.actor, event.subject, event.address) == (
        AuditEvent.Kind.API_KEY_CREATED,
        alice,
        alice,
        "192.0.2.7",
    )
    assert event.detail == {
        "key": "report",
        "shown": api_key.shown,
        "expires_at": expires.isoformat(),
        "models": ["big:70b"],
        "store_conversations": True,
    }


def test_a_key_made_by_the_system_names_no_actor(alice):
    ApiKey.issue(alice, "ci", actor=None, method="command")
    event = AuditEvent.objects.get()
    assert (event.actor, event.subject, event.method) == (None, alice, "command")


def test_a_key_and_its_model_restriction_are_saved_together_or_not_at_all(alice):
    # A restriction that cannot be saved must not leave a key to every model.
    unsaved = ModelProfile(tag="ghost:1b", base_url="http://127.0.0.1:1")
    with pytest.raises(ValueError):
        ApiKey.issue(alice, "restricted", profiles=[unsaved])
    assert not ApiKey.objects.exists()
    assert not AuditEvent.objects.exists()


# ---- revoking and states --------------------------------------------------------


def test_revoking_is_audited_once_and_a_second_time_is_harmless(alice, bob):
    api_key, key = ApiKey.issue(alice, "old")
    AuditEvent.objects.all().delete()
    assert api_key.revoke(actor=bob, address="192.0.2.9", method="admin") is True
    assert api_key.revoke(actor=bob) is False
    api_key.refresh_from_db()
    assert api_key.revoked_by == bob and api_key.state == "revoked"
    event = AuditEvent.objects.get()
    assert (event.kind, event.actor, event.subject, event.address, event.method) == (
        AuditEvent.Kind.API_KEY_REVOKED,
        bob,
        alice,
        "192.0.2.9",
        "admin",
    )
    with pytest.raises(Refused, match="revoked"):
        ApiKey.authenticate(key)


def test_each_state_is_found_by_its_queryset(alice):
    active, _ = ApiKey.issue(alice, "a", expires_at=timezone.now() + timedelta(days=1))
    forever, _ = ApiKey.issue(alice, "f")
    expired, _ = ApiKey.issue(alice, "e", expires_at=ago(seconds=1))
    revoked, _ = ApiKey.issue(alice, "r")
    revoked.revoke(actor=alice)
    by_state = {
        state: set(ApiKey.objects.in_state(state))
        for state in ("active", "expired", "revoked")
    }
    assert by_state == {
        "active": {active, forever},
        "expired": {expired},
        "revoked": {revoked},
    }
    for state, keys in by_state.items():
        assert {key.state for key in keys} == {state}
    assert set(ApiKey.objects.active()) == {active, forever}
    assert not ApiKey.objects.in_state("bogus").exists()


# ---- authenticating -------------------------------------------------------------


def test_no_key_is_refused_with_how_to_send_one():
    with pytest.raises(Refused, match="Authorization: Bearer"):
        ApiKey.authenticate("")


def test_an_unknown_key_is_refused(alice):
    _, key = ApiKey.issue(alice, "k")
    for wrong in ("csk-nothing", key + "x", key[:-1], key.upper()):
        with pytest.raises(Refused, match="not valid"):
            ApiKey.authenticate(wrong)


def test_an_expired_key_is_refused_with_its_date(alice):
    api_key, key = ApiKey.issue(alice, "k", expires_at=ago(minutes=5))
    with pytest.raises(Refused, match=f"expired on {api_key.expires_at:%d %b %Y}"):
        ApiKey.authenticate(key)


def test_the_key_of_a_switched_off_account_is_refused(alice):
    _, key = ApiKey.issue(alice, "k")
    alice.is_active = False
    alice.save()
    with pytest.raises(Refused, match="switched off"):
        ApiKey.authenticate(key)


@pytest.mark.parametrize("how", ["set_password", "set_unusable_password"])
def test_a_new_password_revokes_every_key_of_its_owner(alice, bob, how):
    """However it is set (the account page, the admin, `changepassword` all
    call set_password): the keys were made under the old one."""
    _, key = ApiKey.issue(alice, "laptop")
    _, other = ApiKey.issue(alice, "ci")
    _, bobs = ApiKey.issue(bob, "bob's")
    if how == "set_password":
        alice.set_password("a-long-new-password-7")
    else:
        alice.set_unusable_password()
    alice.save()
    for revoked in (key, other):
        with pytest.raises(Refused, match="revoked"):
            ApiKey.authenticate(revoked)
    assert ApiKey.authenticate(bobs).user == bob
    events = AuditEvent.objects.filter(kind=AuditEvent.Kind.API_KEY_REVOKED)
    assert sorted(e.detail["key"] for e in events) == ["ci", "laptop"]
    assert {e.method for e in events} == {"password"}


def test_other_changes_and_an_upgraded_hash_keep_the_keys(alice, settings):
    """Django rehashes a password at sign-in when its hasher changed (a new
    Django, more iterations): the same password, so the keys stay."""
    _, key = ApiKey.issue(alice, "laptop")
    alice.first_name = "Alice"
    alice.save()
    alice.save(update_fields=["last_login"])
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
        *settings.PASSWORD_HASHERS,
    ]
    before = alice.password
    assert alice.check_password(PASSWORDS["alice"])
    alice.refresh_from_db()
    assert alice.password != before  # rehashed and saved
    assert ApiKey.authenticate(key).user == alice


def test_switching_an_account_off_revokes_its_keys_for_good(alice):
    _, key = ApiKey.issue(alice, "k")
    alice.is_active = False
    alice.save()
    alice.is_active = True
    alice.save()
    with pytest.raises(Refused, match="revoked"):
        ApiKey.authenticate(key)
    event = AuditEvent.objects.get(kind=AuditEvent.Kind.API_KEY_REVOKED)
    assert event.method == "disabled"


def test_every_key_is_refused_while_the_site_has_the_api_off(alice):
    _, key = ApiKey.issue(alice, "k")
    site = SiteDefaults.load()
    site.api_enabled = False
    site.save()
    with pytest.raises(Refused, match="not open to you"):
        ApiKey.authenticate(key)
    site.api_enabled = True
    site.save()
    assert ApiKey.authenticate(key).user == alice


def test_an_api_for_some_teams_takes_only_their_members_keys(alice, bob, gpu_team):
    _, alices = ApiKey.issue(alice, "k")
    _, bobs = ApiKey.issue(bob, "k")
    SiteDefaults.load().api_teams.add(gpu_team)
    assert ApiKey.authenticate(alices).user == alice
    with pytest.raises(Refused, match="not open to you"):
        ApiKey.authenticate(bobs)
    assert api_access_for(alice) and not api_access_for(bob)


# ---- last use: noted at most once a minute per address ---------------------------


def test_the_first_use_is_noted_with_its_address(alice):
    api_key, key = ApiKey.issue(alice, "k")
    assert api_key.last_used_at is None
    ApiKey.authenticate(key, "192.0.2.1")
    api_key.refresh_from_db()
    assert api_key.last_used_from == "192.0.2.1"
    assert timezone.now() - api_key.last_used_at < timedelta(seconds=5)


def test_uses_within_a_minute_from_one_address_are_not_written_again(alice):
    api_key, key = ApiKey.issue(alice, "k")
    ApiKey.authenticate(key, "192.0.2.1")
    earlier = ago(seconds=50)
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=earlier)
    ApiKey.authenticate(key, "192.0.2.1")
    api_key.refresh_from_db()
    assert api_key.last_used_at == earlier

    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=ago(seconds=61))
    ApiKey.authenticate(key, "192.0.2.1")
    api_key.refresh_from_db()
    assert timezone.now() - api_key.last_used_at < timedelta(seconds=5)


def test_a_use_from_another_address_is_written_at_once(alice):
    api_key, key = ApiKey.issue(alice, "k")
    ApiKey.authenticate(key, "192.0.2.1")
    ApiKey.authenticate(key, "192.0.2.2")
    api_key.refresh_from_db()
    assert api_key.last_used_from == "192.0.2.2"


@pytest.mark.parametrize("address", ["2001:DB8:0:0::1", "::ffff:192.0.2.1"])
def test_an_address_the_database_writes_otherwise_is_still_the_same(alice, address):
    api_key, key = ApiKey.issue(alice, "k")
    ApiKey.authenticate(key, address)
    earlier = ago(seconds=30)
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=earlier)
    ApiKey.authenticate(key, address)
    api_key.refresh_from_db()
    assert api_key.last_used_at == earlier


def test_a_use_without_an_ip_address_is_noted_without_one(alice):
    api_key, key = ApiKey.issue(alice, "k")
    ApiKey.authenticate(key, "unix-socket")
    api_key.refresh_from_db()
    assert api_key.last_used_at is not None and api_key.last_used_from is None


# ---- which models a key may ask --------------------------------------------------


def test_an_unrestricted_key_asks_every_model_its_owner_may(
    alice, bob, demo_profile, big, gpu_only
):
    disabled = ModelProfile.objects.create(
        tag="off:1b", base_url=demo_profile.base_url, enabled=False
    )
    alices, _ = ApiKey.issue(alice, "k")
    bobs, _ = ApiKey.issue(bob, "k")
    assert list(alices.usable_profiles()) == [demo_profile, big, gpu_only]
    assert list(bobs.usable_profiles()) == [demo_profile, big]
    assert alices.allows(gpu_only) and not alices.usable_profiles().filter(
        pk=disabled.pk
    )


def test_a_restricted_key_asks_only_its_models_that_its_owner_still_may(
    alice, demo_profile, big, gpu_only, gpu_team
):
    api_key, _ = ApiKey.issue(alice, "k", profiles=[big, gpu_only])
    assert list(api_key.usable_profiles()) == [big, gpu_only]
    assert api_key.allows(big) and not api_key.allows(demo_profile)
    # Alice leaves the team: the key loses that model with her.
    gpu_team.memberships.filter(user=alice).delete()
    assert list(api_key.usable_profiles()) == [big]


def test_a_key_for_a_deleted_model_alone_is_revoked_not_opened_to_all(alice):
    one = ModelProfile.objects.create(tag="one:1b", base_url="http://127.0.0.1:9")
    two = ModelProfile.objects.create(tag="two:1b", base_url="http://127.0.0.1:9")
    alone, _ = ApiKey.issue(alice, "alone", profiles=[one])
    both, _ = ApiKey.issue(alice, "both", profiles=[one, two])
    one.delete()
    alone.refresh_from_db()
    both.refresh_from_db()
    assert alone.state == "revoked"
    assert both.state == "active"
    assert list(both.usable_profiles()) == [two]
