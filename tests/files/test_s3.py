"""In S3 mode the files are objects of the bucket, not files on disk, and go
from the bucket with their conversation (tests/files/s3.py)."""

from __future__ import annotations

import io
import uuid

import boto3
import pytest
from django.urls import reverse

from chat.models import Attachment
from tests.files import samples
from tests.files.s3 import (
    KEY,
    REGION,
    SECRET,
    bucket_keys,
    s3_server,  # noqa: F401 (a fixture)
    s3_storage,
)

pytestmark = pytest.mark.django_db


def test_an_upload_is_an_object_of_the_bucket_and_leaves_with_its_conversation(
    alice_client,
    conversation,
    demo_profile,
    s3_server,  # noqa: F811
    settings,
    django_capture_on_commit_callbacks,
):
    bucket = f"chatsite-{uuid.uuid4().hex[:12]}"
    boto3.client(
        "s3",
        endpoint_url=s3_server,
        region_name=REGION,
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
    ).create_bucket(Bucket=bucket)
    settings.STORAGES = {**settings.STORAGES, "default": s3_storage(s3_server, bucket)}
    demo_profile.supports_vision = True
    demo_profile.save()
    file = io.BytesIO(samples.png())
    file.name = "screen.png"
    response = alice_client.post(
        reverse("upload_attachment"), {"file": file, "conversation": conversation.pk}
    )
    assert response.status_code == 201
    attachment = Attachment.objects.get()
    assert bucket_keys(s3_server, bucket) == sorted(
        [
            f"attachments/{attachment.storage_name}",
            f"attachments/{attachment.thumbnail_name}",
        ]
    )
    served = alice_client.get(response.json()["url"])
    assert b"".join(served.streaming_content) == attachment.read()
    with django_capture_on_commit_callbacks(execute=True):
        conversation.delete()
    assert bucket_keys(s3_server, bucket) == []
