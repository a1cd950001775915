from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured

SETTINGS_FILE = Path(__file__).resolve().parents[2] / "chatsite" / "settings.py"
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


def test_attachments_go_to_the_media_folder_by_default(monkeypatch, tmp_path):
    monkeypatch.delenv("CHATSITE_S3_BUCKET", raising=False)
    monkeypatch.setenv("CHATSITE_MEDIA_ROOT", str(tmp_path))
    conf = load_settings(monkeypatch)
    assert conf["STORAGES"]["default"] == {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": tmp_path, "base_url": None},
    }
    assert conf["ATTACHMENT_MAX_BYTES"] == 20 * 1024 * 1024
    assert conf["ATTACHMENT_MAX_FILES"] == 10


def test_a_bucket_puts_attachments_in_an_s3_compatible_store(monkeypatch):
    conf = load_settings(
        monkeypatch,
        CHATSITE_S3_BUCKET="team-files",
        CHATSITE_S3_ENDPOINT_URL="http://minio:9000",
    )
    default = conf["STORAGES"]["default"]
    assert default["BACKEND"] == "storages.backends.s3.S3Storage"
    assert default["OPTIONS"]["bucket_name"] == "team-files"
    assert default["OPTIONS"]["endpoint_url"] == "http://minio:9000"
    assert default["OPTIONS"]["default_acl"] == "private"
    assert default["OPTIONS"]["access_key"] is None  # boto3's own chain


def test_a_bad_bucket_endpoint_stops_the_site(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="CHATSITE_S3_ENDPOINT_URL"):
        load_settings(
            monkeypatch,
            CHATSITE_S3_BUCKET="team-files",
            CHATSITE_S3_ENDPOINT_URL="minio:9000",
        )
