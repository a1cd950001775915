"""`chat.api.requests`: a request's body decoded as one JSON object, each refusal a
400 that says what is wrong, 413 over the body's limit, which grows with the
message limit. No server, no database: marked `smoke`, so they run on the
zero-config defaults too."""

from __future__ import annotations

import pytest
from django.test import override_settings

from chat.api.errors import ApiError
from chat.api.requests import decode, max_body_bytes
from tests.api.requests.reading import refused

pytestmark = pytest.mark.smoke


def test_decode_reads_a_json_object():
    assert decode(b'{"model": "m", "x": [1, 2]}') == {"model": "m", "x": [1, 2]}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "The request body is not valid JSON."),
        (b"{", "The request body is not valid JSON."),
        (b"{'model': 'm'}", "The request body is not valid JSON."),
        (b'{"a": 1} trailing', "The request body is not valid JSON."),
        (b"[1, 2]", "The request body must be a JSON object."),
        (b'"text"', "The request body must be a JSON object."),
        (b"null", "The request body must be a JSON object."),
        # A lone surrogate escaped in JSON: valid JSON, text no database stores.
        (b'{"a": "\\ud800"}', "The request body holds text that is not valid Unicode."),
        (
            b'{"messages": [{"content": "\\udfff x"}]}',
            "The request body holds text that is not valid Unicode.",
        ),
        # Bytes that are not UTF-8 at all.
        (
            b'{"a": "\xff\xfe"}',
            "The request body holds text that is not valid Unicode.",
        ),
        (b"[" * 100_000 + b"]" * 100_000, "The request body is nested too deeply."),
        (
            b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
            "The request body is nested too deeply.",
        ),
    ],
)
def test_decode_refuses_with_a_reason(body, message):
    assert refused(decode, body).message == message


def test_decode_takes_a_paired_surrogate_escape():
    assert decode(b'{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}


def test_decode_refuses_a_body_over_the_limit_with_413():
    with pytest.raises(ApiError) as caught:
        decode(b" " * (max_body_bytes() + 1))
    assert caught.value.status == 413
    assert caught.value.code == "request_too_large"
    assert f"{max_body_bytes():,}" in caught.value.message


def test_decode_takes_a_body_at_the_limit():
    body = b'{"pad": "' + b"x" * (max_body_bytes() - 11) + b'"}'
    assert len(body) == max_body_bytes()
    assert len(decode(body)["pad"]) == max_body_bytes() - 11


@override_settings(MESSAGE_MAX_CHARS=10)
def test_the_body_limit_is_at_least_one_mebibyte():
    assert max_body_bytes() == 1024 * 1024


@override_settings(MESSAGE_MAX_CHARS=1_000_000)
def test_the_body_limit_grows_with_the_message_limit():
    assert max_body_bytes() == 32_000_000
