from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured

SETTINGS_FILE = Path(__file__).resolve().parent.parent / "chatsite" / "settings.py"
TLS_ENV = (
    "TRUST_X_FORWARDED_PROTO",
    "HTTPS_ONLY",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
)


def load_settings(monkeypatch, **env: str) -> dict:
    for name in (*TLS_ENV, "HEALTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(SETTINGS_FILE))


def test_plain_http_by_default(monkeypatch):
    conf = load_settings(monkeypatch)
    assert conf["SECURE_PROXY_SSL_HEADER"] is None
    assert not conf["SECURE_SSL_REDIRECT"]
    assert not conf["SESSION_COOKIE_SECURE"] and not conf["CSRF_COOKIE_SECURE"]
    assert conf["SECURE_HSTS_SECONDS"] == 0
    assert conf["HEALTH_TOKEN"] == ""


def test_behind_a_tls_proxy(monkeypatch):
    conf = load_settings(
        monkeypatch,
        TRUST_X_FORWARDED_PROTO="true",
        HTTPS_ONLY="true",
        SECURE_HSTS_SECONDS="31536000",
        HEALTH_TOKEN=" abc ",
    )
    assert conf["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
    assert conf["SECURE_SSL_REDIRECT"]
    assert conf["SESSION_COOKIE_SECURE"] and conf["CSRF_COOKIE_SECURE"]
    assert conf["SECURE_HSTS_SECONDS"] == 31536000
    assert conf["HEALTH_TOKEN"] == "abc"


@pytest.mark.parametrize(
    "env", [{"HTTPS_ONLY": "sometimes"}, {"SECURE_HSTS_SECONDS": "-1"}]
)
def test_malformed_tls_settings_fail_loudly(monkeypatch, env):
    with pytest.raises(ImproperlyConfigured):
        load_settings(monkeypatch, **env)


def deploy_warnings() -> set[str]:
    return {m.id for m in run_checks(include_deployment_checks=True, tags=["security"])}


def test_tls_settings_silence_the_deploy_checks(settings):
    settings.DEBUG = False
    settings.SECRET_KEY = "a-long-random-production-key-" + "x9Y2" * 10
    assert {"security.W008", "security.W012", "security.W016"} <= deploy_warnings()
    settings.SECURE_SSL_REDIRECT = settings.SESSION_COOKIE_SECURE = True
    settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_HSTS_SECONDS = 3600
    remaining = deploy_warnings()
    assert not remaining & {"security.W004", "security.W008", "security.W012"}
    assert "security.W016" not in remaining


@pytest.mark.django_db(transaction=True)
def test_https_redirect_spares_the_health_check(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    response = client.get("/login/")
    assert response.status_code == 301
    assert response.url == "https://testserver/login/"
    response = client.get("/login/", headers={"x-forwarded-proto": "https"})
    assert response.status_code == 200
    assert client.get("/healthz").status_code == 200


@pytest.mark.django_db
def test_forwarded_proto_is_ignored_unless_trusted(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = None
    response = client.get("/login/", headers={"x-forwarded-proto": "https"})
    assert response.status_code == 301


def test_hsts_covers_subdomains_and_preload_unless_told_not_to(monkeypatch):
    conf = load_settings(monkeypatch)
    assert conf["SECURE_HSTS_INCLUDE_SUBDOMAINS"] and conf["SECURE_HSTS_PRELOAD"]
    conf = load_settings(
        monkeypatch,
        SECURE_HSTS_INCLUDE_SUBDOMAINS="false",
        SECURE_HSTS_PRELOAD="false",
    )
    assert not conf["SECURE_HSTS_INCLUDE_SUBDOMAINS"]
    assert not conf["SECURE_HSTS_PRELOAD"]


def test_the_cache_is_redis_when_there_is_one(monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)
    local = load_settings(monkeypatch)["CACHES"]["default"]
    assert local["BACKEND"].endswith("LocMemCache")
    shared = load_settings(monkeypatch, REDIS_URL="redis://10.0.0.5:6379/1")
    assert shared["CACHES"]["default"]["BACKEND"].endswith("redis.RedisCache")
    assert shared["CACHES"]["default"]["LOCATION"] == "redis://10.0.0.5:6379/1"


@pytest.mark.parametrize(
    "env", [{"WS_FRAME_RATE": "0"}, {"SIGNIN_LOCKOUT_SECONDS": "soon"}]
)
def test_malformed_limits_fail_loudly(monkeypatch, env):
    with pytest.raises(ImproperlyConfigured):
        load_settings(monkeypatch, **env)
