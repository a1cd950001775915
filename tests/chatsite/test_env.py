from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from chatsite.env import env_bool, env_int, env_list, env_networks, env_url


def test_env_bool(monkeypatch):
    monkeypatch.setenv("FLAG", "Yes")
    assert env_bool("FLAG", False) is True
    monkeypatch.setenv("FLAG", "off")
    assert env_bool("FLAG", True) is False
    monkeypatch.delenv("FLAG")
    assert env_bool("FLAG", True) is True


def test_env_bool_rejects_garbage(monkeypatch):
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="FLAG"):
        env_bool("FLAG", False)


def test_env_int(monkeypatch):
    monkeypatch.setenv("N", "12")
    assert env_int("N", 1) == 12
    monkeypatch.setenv("N", "twelve")
    with pytest.raises(ImproperlyConfigured, match="not an integer"):
        env_int("N", 1)
    monkeypatch.setenv("N", "0")
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("N", 1, minimum=1)


def test_env_list(monkeypatch):
    monkeypatch.setenv("HOSTS", "a.example, b.example,,")
    assert env_list("HOSTS", []) == ["a.example", "b.example"]


def test_env_url(monkeypatch):
    monkeypatch.setenv("URL", "http://box:11434/")
    assert env_url("URL", "", schemes=("http", "https")) == "http://box:11434"
    monkeypatch.setenv("URL", "box:11434")
    with pytest.raises(ImproperlyConfigured, match="http://"):
        env_url("URL", "", schemes=("http", "https"))


def settings_with(env: dict[str, str]) -> dict:
    """chatsite.settings' DATABASES as a fresh process with `env` reads it."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json, chatsite.settings as s;"
        "print(json.dumps(s.DATABASES['default'].get('OPTIONS', {})))"
    )
    full = {**os.environ, **env}
    out = subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_postgresql_connections_come_from_a_pool_unless_turned_off():
    url = {"DATABASE_URL": "postgres://chatsite@db.internal:5432/chatsite"}
    assert settings_with(url)["pool"] == {"min_size": 1, "max_size": 10, "timeout": 10}
    sized = settings_with({**url, "DATABASE_POOL_SIZE": "25"})
    assert sized["pool"]["max_size"] == 25
    assert "pool" not in settings_with({**url, "DATABASE_POOL": "false"})
    sqlite = settings_with({"DATABASE_URL": "sqlite:////tmp/x.sqlite3"})
    assert "pool" not in sqlite


def test_postgresql_statements_may_be_prepared_unless_turned_off():
    """On: psycopg prepares what a server-binding cursor runs
    (`chat.models.compiled_queries`); Django's own client-binding cursors never are."""
    url = {"DATABASE_URL": "postgres://chatsite@db.internal:5432/chatsite"}
    assert settings_with(url)["prepare_threshold"] == 5
    assert "prepare_threshold" not in settings_with(
        {**url, "DATABASE_PREPARED": "false"}
    )
    sqlite = settings_with({"DATABASE_URL": "sqlite:////tmp/x.sqlite3"})
    assert "prepare_threshold" not in sqlite


def test_env_networks(monkeypatch):
    monkeypatch.delenv("PROXIES", raising=False)
    assert env_networks("PROXIES") == ()
    monkeypatch.setenv("PROXIES", "127.0.0.1, 10.0.0.0/8,::1")
    assert env_networks("PROXIES") == ("127.0.0.1", "10.0.0.0/8", "::1")
    monkeypatch.setenv("PROXIES", "127.0.0.1,nginx.internal")
    with pytest.raises(ImproperlyConfigured, match="'nginx.internal' is not an IP"):
        env_networks("PROXIES")
