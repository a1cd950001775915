from __future__ import annotations

import pytest

from chat.checks import settings_check


def ids(settings_obj=None):
    return sorted(problem.id for problem in settings_check(None))


def test_debug_mode_raises_nothing(settings):
    settings.DEBUG = True
    settings.SECRET_KEY = settings.DEV_SECRET_KEY
    assert ids() == []


def test_production_with_dev_key_and_memory_layer_is_flagged(settings):
    settings.DEBUG = False
    settings.SECRET_KEY = settings.DEV_SECRET_KEY
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}
    }
    assert ids() == ["chat.E001", "chat.W001"]


def test_production_with_redis_and_a_real_key_is_clean(settings):
    settings.DEBUG = False
    settings.SECRET_KEY = "x" * 60
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer"}
    }
    assert ids() == []


def test_messages_larger_than_daphne_takes_are_flagged(settings):
    settings.DEBUG = True
    settings.MESSAGE_MAX_CHARS = 100_000  # 400 kB of UTF-8 at most: fits
    assert ids() == []
    settings.MESSAGE_MAX_CHARS = 1_000_000
    (problem,) = settings_check(None)
    assert problem.id == "chat.W002"
    assert "--websocket-max-message-size 4016384" in problem.hint


def production(settings) -> None:
    settings.DEBUG = False
    settings.SECRET_KEY = "x" * 60
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer"}
    }


def test_any_host_is_flagged_in_production(settings):
    production(settings)
    settings.ALLOWED_HOSTS = ["chat.example.com", "*"]
    assert ids() == ["chat.W003"]


@pytest.mark.parametrize(
    "token",
    [
        "replace-with-another-random-value",  # deploy/env.example's
        "change-me-change-me",
        "short",
        "aaaaaaaaaaaaaaaaaaaaaaaa",
        "abababababababababab",
    ],
)
@pytest.mark.parametrize("name", ["HEALTH_TOKEN", "METRICS_TOKEN"])
def test_a_guessable_token_is_flagged_in_production(settings, name, token):
    production(settings)
    setattr(settings, name, token)
    (problem,) = settings_check(None)
    assert problem.id == "chat.W004" and name in problem.msg


def test_random_or_unset_tokens_are_not_flagged(settings):
    production(settings)
    settings.HEALTH_TOKEN = "k3Q9vX2mPz7LwR4tY8uB1nC6"
    settings.METRICS_TOKEN = ""
    assert ids() == []
