"""`manage.py create_api_key` (chat/management/commands/create_api_key.py): the
key alone on stdout, everything else on stderr, refusals with no key made."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from chat.models import ApiKey, AuditEvent, ModelProfile, SiteDefaults, Team

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("create_api_key", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused(message: str, *args: str) -> None:
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert not ApiKey.objects.exists()
    assert not AuditEvent.objects.exists()


@pytest.fixture
def gpu_only(demo_profile):
    profile = ModelProfile.objects.create(
        tag="gpu:120b", base_url=demo_profile.base_url
    )
    profile.teams.add(Team.objects.create(name="GPU"))
    return profile


def test_stdout_is_the_key_and_a_newline_and_nothing_else(alice):
    out, err = run("alice", "--name", "ci runner")
    key = out.removesuffix("\n")
    assert out == key + "\n" and "\n" not in key and key.startswith("csk-")
    api_key = ApiKey.authenticate(key)
    assert (api_key.user, api_key.name, api_key.expires_at) == (
        alice,
        "ci runner",
        None,
    )
    assert not api_key.profiles.exists() and not api_key.store_conversations
    assert key not in err and f"{api_key.shown}…" in err and "alice" in err


def test_the_key_is_audited_as_made_by_the_command(alice):
    out, _ = run("alice", "--name", "ci")
    event = AuditEvent.objects.get()
    assert (event.kind, event.actor, event.subject, event.method) == (
        AuditEvent.Kind.API_KEY_CREATED,
        None,
        alice,
        "command",
    )
    assert out.strip() not in str(event.detail)


def test_expiry_models_and_stored_answers(alice, demo_profile):
    out, _ = run(
        "alice",
        "--name",
        "nightly",
        "--expires-days",
        "30",
        "--model",
        demo_profile.tag,
        "--store-conversations",
    )
    api_key = ApiKey.authenticate(out.strip())
    days = (api_key.expires_at - timezone.now()).total_seconds() / 86400
    assert 29.99 < days <= 30
    assert list(api_key.profiles.all()) == [demo_profile]
    assert api_key.store_conversations


def test_a_tag_given_twice_or_on_two_servers_names_each_profile_once(
    alice, demo_profile
):
    twin = ModelProfile.objects.create(
        tag=demo_profile.tag, base_url="http://127.0.0.1:1"
    )
    tag = demo_profile.tag
    out, _ = run("alice", "--name", "k", "--model", tag, "--model", tag)
    api_key = ApiKey.authenticate(out.strip())
    assert set(api_key.profiles.all()) == {demo_profile, twin}


def test_an_unknown_user_is_refused(alice):
    refused("No user is called 'carol'", "carol", "--name", "k")


def test_a_switched_off_account_is_refused(alice):
    alice.is_active = False
    alice.save()
    refused("'alice' is switched off", "alice", "--name", "k")


def test_an_unknown_model_is_refused(alice, demo_profile):
    refused(
        "No model profile has the tag 'nope:1b'",
        *("alice", "--name", "k", "--model", demo_profile.tag, "--model", "nope:1b"),
    )


def test_a_model_the_user_may_not_use_is_refused(alice, gpu_only):
    refused(
        "alice may not use 'gpu:120b'", "alice", "--name", "k", "--model", "gpu:120b"
    )


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_a_blank_or_too_long_name_is_refused(alice, name):
    refused("--name must be 1 to 100 characters", "alice", "--name", name)


def test_a_name_is_required(alice):
    refused("--name", "alice")


@pytest.mark.parametrize("days", ["0", "-5"])
def test_an_expiry_not_in_the_future_is_refused(alice, days):
    refused(
        "--expires-days must be 1 or more",
        "alice",
        "--name",
        "k",
        f"--expires-days={days}",
    )


def test_with_the_api_closed_the_key_is_made_with_a_note(alice):
    site = SiteDefaults.load()
    site.api_enabled = False
    site.save()
    out, err = run("alice", "--name", "k")
    assert out.startswith("csk-") and out.count("\n") == 1
    assert "not open to this user now" in err
    assert ApiKey.objects.get().user == alice
