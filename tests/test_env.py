from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from chatsite.env import env_bool, env_int, env_list, env_url


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
