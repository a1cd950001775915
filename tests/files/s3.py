"""A real S3-compatible server for the attachment tests in S3 mode: moto's
server (`moto[server]` from PyPI) in a process of its own on a free port,
reached through django-storages and boto3 exactly as production reaches a
bucket (`CHATSITE_S3_*`, chatsite/settings.py).

Fixtures: `s3_server` (session): the running server's URL; `storage`
(function, parametrized): the tests of a module that uses it run once on the
filesystem and once on a fresh bucket."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from tests.support.services.daphnes import free_port
from tests.support.waiting import until_sync

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "test-artifacts" / "moto-s3.log"
SETTINGS_FILE = ROOT / "chatsite" / "settings.py"
KEY, SECRET, REGION = "testing-key", "testing-secret", "us-east-1"


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    LOG.parent.mkdir(exist_ok=True)
    with LOG.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "MOTO_ALLOW_NONEXISTENT_REGION": "true"},
        )

    def answers() -> bool:
        assert process.poll() is None, LOG.read_text()[-3000:]
        try:
            return httpx.get(url + "/moto-api/", timeout=1).status_code < 500
        except httpx.HTTPError:
            return False

    try:
        until_sync(answers, "the S3 server answers", timeout=60)
        yield url
    finally:
        process.terminate()
        process.wait(15)


def s3_storage(url: str, bucket: str) -> dict[str, Any]:
    """`STORAGES["default"]` as chatsite/settings.py makes it from the
    environment a deployment would set."""
    env = {
        "CHATSITE_S3_BUCKET": bucket,
        "CHATSITE_S3_ENDPOINT_URL": url,
        "CHATSITE_S3_REGION": REGION,
        "CHATSITE_S3_ACCESS_KEY_ID": KEY,
        "CHATSITE_S3_SECRET_ACCESS_KEY": SECRET,
    }
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        storages: dict[str, Any] = runpy.run_path(str(SETTINGS_FILE))["STORAGES"]
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return storages["default"]


def bucket_keys(url: str, bucket: str) -> list[str]:
    client = boto3.client(
        "s3",
        endpoint_url=url,
        region_name=REGION,
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
    )
    listed = client.list_objects_v2(Bucket=bucket)
    return sorted(entry["Key"] for entry in listed.get("Contents", []))


@pytest.fixture(params=["filesystem", "s3"])
def storage(request: pytest.FixtureRequest, settings: Any) -> Iterator[str]:
    """The attachments' storage: the media folder, or a new bucket."""
    if request.param == "filesystem":
        yield "filesystem"
        return
    url = request.getfixturevalue("s3_server")
    bucket = f"chatsite-{uuid.uuid4().hex[:12]}"
    boto3.client(
        "s3",
        endpoint_url=url,
        region_name=REGION,
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
    ).create_bucket(Bucket=bucket)
    settings.STORAGES = {**settings.STORAGES, "default": s3_storage(url, bucket)}
    yield f"s3:{bucket}"
