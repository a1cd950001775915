from __future__ import annotations

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
