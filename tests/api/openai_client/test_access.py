"""The official `openai` client against the live server's `/v1`: the models a key
may ask; the key that cannot be used, the API switched off, a model not the
key's to ask, a quota reached and the request rate, each refused as the client's
own exception class."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import openai
import pytest
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from chat.api.auth import RATE_WINDOW_SECONDS
from chat.models import Message, SiteDefaults, quotas
from chat.ops.throughput import Window, summary
from tests.api.conftest import (
    MODEL,
    issue,
    make_profile,
    openai_client,
    stored_answer,
    team_of,
)
from tests.api.openai_client.asking import ask

pytestmark = pytest.mark.django_db(transaction=True)


# ---- the models --------------------------------------------------------------


def test_models_lists_only_what_the_key_may_ask(oa, alice, bob, simulator):
    make_profile("llama-demo:3b", simulator.url, teams=[team_of("GPU", alice)])
    make_profile("ops-only:1b", simulator.url, teams=[team_of("Ops", bob)])
    make_profile("switched-off:1b", simulator.url, enabled=False)

    models = oa.models.list()

    assert [m.id for m in models.data] == [MODEL, "llama-demo:3b"]
    first = models.data[0]
    assert (first.object, first.owned_by) == ("model", "chatsite")
    assert first.model_extra["context_length"] == 8192
    assert first.model_extra["max_model_len"] == 8192


def test_a_team_model_is_hidden_from_outsiders(
    live_server_url, alice, bob, demo_profile, simulator
):
    make_profile("gpu-only:1b", simulator.url, teams=[team_of("GPU", alice)])
    with openai_client(live_server_url, issue(bob).key) as client:
        assert [m.id for m in client.models.list().data] == [MODEL]


def test_a_key_restricted_to_one_model_lists_that_one(
    live_server_url, alice, demo_profile, simulator
):
    other = make_profile("llama-demo:3b", simulator.url)
    with openai_client(live_server_url, issue(alice, profiles=[other]).key) as client:
        assert [m.id for m in client.models.list().data] == ["llama-demo:3b"]


# ---- refusals: the key -----------------------------------------------------------


def wrong_key(user: Any) -> str:
    return "csk-" + "A" * 43


def revoked_key(user: Any) -> str:
    issued = issue(user)
    issued.api_key.revoke(actor=user)
    return issued.key


def expired_key(user: Any) -> str:
    return issue(user, expires_at=timezone.now() - timedelta(minutes=1)).key


def switched_off_owner(user: Any) -> str:
    key = issue(user).key
    user.is_active = False
    user.save()
    return key


@pytest.mark.parametrize(
    ("make_key", "message"),
    [
        (wrong_key, "That API key is not valid."),
        (revoked_key, "That API key was revoked."),
        (expired_key, "That API key expired on "),
        (switched_off_owner, "The account of that API key is switched off."),
    ],
    ids=["wrong", "revoked", "expired", "switched-off-owner"],
)
def test_a_key_that_cannot_be_used_is_401(
    live_server_url, alice, demo_profile, simulator, make_key: Callable, message
):
    with openai_client(live_server_url, make_key(alice)) as client:
        for call in (client.models.list, lambda: ask(client, stream=True)):
            with pytest.raises(openai.AuthenticationError) as caught:
                call()
            error = caught.value
            assert error.status_code == 401
            assert (error.code, error.type) == (
                "invalid_api_key",
                "authentication_error",
            )
            assert error.body["message"].startswith(message)
            assert error.response.headers["www-authenticate"] == (
                'Bearer realm="chatsite"'
            )
    assert not simulator.log
    assert not Message.objects.exists()


def test_a_key_revoked_while_in_use_is_refused_at_once(oa, alice, alice_key, simulator):
    assert ask(oa).choices[0].message.content
    stored_answer(Message.Status.DONE)

    assert alice_key.api_key.revoke(actor=alice)

    with pytest.raises(openai.AuthenticationError, match="revoked"):
        ask(oa)
    assert len(simulator.log) == 1


def test_the_api_switched_off_is_403(oa, simulator):
    site = SiteDefaults.load()
    site.api_enabled = False
    site.save()
    with pytest.raises(openai.PermissionDeniedError) as caught:
        oa.models.list()
    assert caught.value.status_code == 403
    assert caught.value.code == "api_forbidden"
    assert caught.value.type == "permission_error"


def test_the_api_open_to_other_teams_only_is_403(oa, alice, bob, simulator):
    site = SiteDefaults.load()
    site.api_teams.set([team_of("Ops", bob)])
    with pytest.raises(openai.PermissionDeniedError, match="not open to you"):
        ask(oa)

    site.api_teams.add(team_of("GPU", alice))
    assert [m.id for m in oa.models.list().data] == [MODEL]


# ---- refusals: the model ---------------------------------------------------------


def test_a_model_of_another_team_is_403(oa, bob, simulator):
    make_profile("ops-only:1b", simulator.url, teams=[team_of("Ops", bob)])
    with pytest.raises(openai.PermissionDeniedError) as caught:
        ask(oa, model="ops-only:1b")
    assert (caught.value.code, caught.value.param) == ("model_forbidden", "model")
    assert not simulator.log and not Message.objects.exists()


def test_a_model_outside_the_keys_own_is_403(live_server_url, alice, simulator):
    other = make_profile("llama-demo:3b", simulator.url)
    make_profile(MODEL, simulator.url)
    with (
        openai_client(live_server_url, issue(alice, profiles=[other]).key) as client,
        pytest.raises(openai.PermissionDeniedError) as caught,
    ):
        ask(client)
    assert caught.value.code == "model_forbidden"
    assert not simulator.log


@pytest.mark.parametrize("model", ["no-such-model:7b", "qwen3-demo", "switched-off:1b"])
def test_an_unknown_model_is_404(oa, simulator, model):
    make_profile("switched-off:1b", simulator.url, enabled=False)
    with pytest.raises(openai.NotFoundError) as caught:
        ask(oa, model=model)
    error = caught.value
    assert error.status_code == 404
    assert (error.code, error.param, error.type) == (
        "model_not_found",
        "model",
        "not_found_error",
    )
    assert error.body["message"] == f"The model {model} does not exist."
    assert not simulator.log


# ---- refusals: quotas and the request rate -----------------------------------


def test_history_stored_with_the_answer_counts_as_one_answer(oa, alice, simulator):
    """The assistant turns a request sends are the asker's text: stored to
    show the conversation, never counted as answers given here."""
    messages = [
        {"role": "user", "content": "One"},
        {"role": "assistant", "content": "First"},
        {"role": "user", "content": "Two"},
        {"role": "assistant", "content": "Second"},
        {"role": "user", "content": "Three"},
    ]
    ask(oa, messages=messages, extra_headers={"X-Chatsite-Store": "yes"})
    answer = stored_answer(Message.Status.DONE)
    stored = list(answer.conversation.messages.values_list("role", "content"))
    assert stored[:-1] == [(m["role"], m["content"]) for m in messages]
    assert stored[-1] == ("assistant", answer.content)
    assert quotas.usage(alice, "day")[0] == 1
    now = timezone.now()
    window = Window(now - timedelta(hours=1), now + timedelta(hours=1))
    [row] = summary(window)
    assert row["answers"] == 1


def seconds_to_midnight() -> float:
    now = datetime.now(UTC)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time())
    return (midnight.replace(tzinfo=UTC) - now).total_seconds()


def test_a_reached_quota_is_429_with_retry_after(oa, alice, simulator):
    site = SiteDefaults.load()
    site.user_answers = 1
    site.save()
    ask(oa)
    stored_answer(Message.Status.DONE)

    with pytest.raises(openai.RateLimitError) as caught:
        ask(oa, stream=True)

    error = caught.value
    assert (error.status_code, error.code, error.type) == (
        429,
        "quota_reached",
        "rate_limit_error",
    )
    assert "Your quota is reached (1 of 1 answers)" in error.body["message"]
    retry = int(error.response.headers["retry-after"])
    assert abs(retry - seconds_to_midnight()) <= 5
    # Refused before anything was stored or asked.
    assert Message.objects.filter(role=Message.Role.ASSISTANT).count() == 1
    assert len(simulator.log) == 1
    assert quotas.usage(alice, "day")[0] == 1


def test_a_key_over_its_request_rate_is_429_with_retry_after(
    live_server_url, alice, demo_profile, simulator
):
    """The count is in the shared cache: set at the limit here (for this
    minute and the next, whichever the request lands in), the server refuses."""
    if "redis" not in settings.CACHES["default"]["BACKEND"].lower():
        pytest.skip("the live server shares the rate count through Redis")
    limit = settings.API_REQUESTS_PER_MINUTE
    busy, calm = issue(alice, "busy"), issue(alice, "calm")
    window = int(datetime.now(UTC).timestamp() // RATE_WINDOW_SECONDS)
    for minute in (window, window + 1):
        cache.set(f"api-rate:{busy.api_key.pk}:{minute}", limit, 180)

    with (
        openai_client(live_server_url, busy.key) as client,
        pytest.raises(openai.RateLimitError) as caught,
    ):
        client.models.list()
    error = caught.value
    assert error.code == "rate_limited"
    assert f"More than {limit} requests a minute" in error.body["message"]
    assert 1 <= int(error.response.headers["retry-after"]) <= RATE_WINDOW_SECONDS + 1
    # Per key: another key of the same owner is not held up.
    with openai_client(live_server_url, calm.key) as client:
        assert [m.id for m in client.models.list().data] == [MODEL]
