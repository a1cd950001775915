"""A real S3-compatible server for the attachment tests in S3 mode: moto's
server (`moto[server]` from PyPI) in a process of its own on a free port,
reached through django-storages and boto3 exactly as production reaches a
bucket (`CHATSITE_S3_*`, chatsite/settings.py).

Fixtures: `s3_server` (session): the running server's URL; `storage`
(function, parametrized): the tests of a module that uses it run once on the
filesystem and once on a fresh bucket."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from tests.daphnes import free_port
from tests.waiting import until_sync

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "test-artifacts" / "moto-s3.log"
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


def s3_options(url: str, bucket: str) -> dict[str, Any]:
    """The options chatsite/settings.py gives S3Storage from CHATSITE_S3_*."""
    return {
        "bucket_name": bucket,
        "endpoint_url": url,
        "region_name": REGION,
        "access_key": KEY,
        "secret_key": SECRET,
        "location": "attachments",
        "default_acl": "private",
        "querystring_auth": True,
        "file_overwrite": False,
    }


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
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": s3_options(url, bucket),
        },
    }
    yield f"s3:{bucket}"
