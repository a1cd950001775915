"""`chat.api.errors`: the status each refusal and each model-server fault gets,
and how each dialect says it. The HTTP side without a model server: methods,
unknown paths and a missing key, through Django's test client."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import AsyncClient
from django.utils import timezone

from chat.api.errors import ApiError, bad_request, seconds_until

pytestmark = pytest.mark.smoke


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (405, "invalid_request_error"),
        (409, "conflict_error"),
        (413, "invalid_request_error"),
        (429, "rate_limit_error"),
        (500, "server_error"),
        (502, "server_error"),
        (503, "server_error"),
        (504, "server_error"),
    ],
)
def test_openai_error_object(status, kind):
    error = ApiError(status, "some_code", "What went wrong.", "model")
    assert error.openai_body() == {
        "error": {
            "message": "What went wrong.",
            "type": kind,
            "param": "model",
            "code": "some_code",
        }
    }
    response = error.openai_response()
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == error.openai_body()


def test_ollama_error_object():
    error = ApiError(404, "model_not_found", "The model x does not exist.", "model")
    assert error.ollama_body() == {"error": "The model x does not exist."}
    response = error.ollama_response()
    assert response.status_code == 404
    assert json.loads(response.content) == {"error": "The model x does not exist."}


@pytest.mark.parametrize("dialect", ["openai_response", "ollama_response"])
def test_retry_after_is_sent_when_known(dialect):
    response = getattr(
        ApiError(429, "quota_reached", "Wait.", retry_after=42), dialect
    )()
    assert response["Retry-After"] == "42"
    plain = getattr(ApiError(503, "upstream_busy", "Busy."), dialect)()
    assert not plain.has_header("Retry-After")


@pytest.mark.parametrize("dialect", ["openai_response", "ollama_response"])
def test_a_401_names_the_scheme(dialect):
    response = getattr(ApiError(401, "invalid_api_key", "No."), dialect)()
    assert response["WWW-Authenticate"] == 'Bearer realm="chatsite"'
    forbidden = getattr(ApiError(403, "api_forbidden", "No."), dialect)()
    assert not forbidden.has_header("WWW-Authenticate")


def test_the_message_is_the_string():
    assert str(ApiError(400, "x", "The message.")) == "The message."


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("upstream_unreachable", 503),
        ("upstream_busy", 503),
        ("interrupted", 503),
        ("upstream_timeout", 504),
        ("model_not_found", 404),
        ("thinking_unsupported", 400),
        ("bad_request", 400),
        ("malformed", 502),
        ("stream_cut", 502),
        ("upstream_error", 502),
        ("something_new", 500),
        ("", 500),
    ],
)
def test_a_model_server_fault_gets_its_status(code, status):
    error = ApiError.from_upstream(code, "detail for the client")
    assert (error.status, error.code, error.message) == (
        status,
        code,
        "detail for the client",
    )
    assert error.param is None and error.retry_after is None


def test_seconds_until():
    now = timezone.now()
    assert seconds_until(None) is None
    assert seconds_until(now - timedelta(hours=1)) == 1
    assert seconds_until(now) == 1
    later = seconds_until(now + timedelta(seconds=90.5))
    assert later is not None and 90 <= later <= 91
    tomorrow = seconds_until(timezone.now() + timedelta(days=1))
    assert tomorrow is not None and 86399 <= tomorrow <= 86400


def test_bad_request():
    error = bad_request("Wrong.", "stop")
    assert (error.status, error.code, error.message, error.param) == (
        400,
        "invalid_request",
        "Wrong.",
        "stop",
    )


# ---- over HTTP, before any key is looked up ----------------------------------


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("get", "/v1/chat/completions", "POST"),
        ("put", "/v1/chat/completions", "POST"),
        ("post", "/v1/models", "GET"),
        ("delete", "/v1/models", "GET"),
        ("get", "/api/chat", "POST"),
        ("get", "/api/show", "POST"),
        ("post", "/api/tags", "GET, HEAD"),
        ("post", "/api/version", "GET, HEAD"),
    ],
)
async def test_a_method_the_path_does_not_take_is_405(method, path, allowed):
    response = await getattr(AsyncClient(), method)(path)
    assert response.status_code == 405
    assert response["Allow"] == allowed
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    if path.startswith("/v1/"):
        assert body["error"]["code"] == "method_not_allowed"
        assert body["error"]["type"] == "invalid_request_error"
    else:
        assert set(body) == {"error"} and isinstance(body["error"], str)


async def test_an_unknown_openai_path_is_404_in_openai_shape():
    response = await AsyncClient().post("/v1/embeddings", {"input": "x"})
    assert response.status_code == 404
    assert response.json()["error"] == {
        "message": "/v1/embeddings is not part of this API.",
        "type": "not_found_error",
        "param": None,
        "code": "not_found",
    }


async def test_an_unknown_ollama_path_is_404_in_ollama_shape():
    response = await AsyncClient().post("/api/generate", {"prompt": "x"})
    assert response.status_code == 404
    assert response.json() == {"error": "/api/generate is not part of this API."}


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/v1/models", "get"),
        ("/v1/chat/completions", "post"),
        ("/api/tags", "get"),
        ("/api/version", "get"),
        ("/api/chat", "post"),
        ("/api/show", "post"),
    ],
)
@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "csk-no-scheme"],
)
async def test_no_key_is_401_before_the_body_is_read(path, method, authorization):
    """No key at all needs no database: refused before anything is looked up."""
    client = AsyncClient(
        headers={} if authorization is None else {"Authorization": authorization}
    )
    if method == "post":
        response = await client.post(path, "not json", content_type="application/json")
    else:
        response = await client.get(path)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="chatsite"'
    assert response["Cache-Control"] == "no-store"
    message = "No API key: send it as 'Authorization: Bearer <key>'."
    body = response.json()
    text = body["error"]["message"] if path.startswith("/v1/") else body["error"]
    assert text.startswith(message)


@pytest.mark.parametrize(
    "key", ["csk-" + "k" * 197, "sk-proj-" + "k" * 40, "ollama", "Bearer"]
)
async def test_what_cannot_be_a_key_is_401_without_a_lookup(key):
    """No database fixture: a lookup here would fail the test."""
    client = AsyncClient(headers={"Authorization": "Bearer " + key})
    response = await client.get("/v1/models")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
