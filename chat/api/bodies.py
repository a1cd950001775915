"""The API's request bodies (`chat.http.request_bodies`): at most
`chat.api.requests.max_body_bytes`, refused in each dialect's error shape."""

from __future__ import annotations

import json

from chat.api.errors import ApiError
from chat.api.requests import max_body_bytes
from chat.http.request_bodies import JSON, Route


def _openai(status: int, code: str, message: str) -> tuple[bytes, bytes]:
    return JSON, json.dumps(ApiError(status, code, message).openai_body()).encode()


def _ollama(status: int, code: str, message: str) -> tuple[bytes, bytes]:
    return JSON, json.dumps(ApiError(status, code, message).ollama_body()).encode()


def api_route(path: str) -> Route | None:
    """The route of an API path (/v1/: OpenAI's, /api/: Ollama's)."""
    if not path.startswith(("/v1/", "/api/")):
        return None
    shape = _openai if path.startswith("/v1/") else _ollama
    return Route(max_body_bytes(), False, shape, _too_large)


def _too_large(limit: int) -> str:
    # As chat.api.requests.decode says it.
    return f"The request body is over the limit of {limit:,} bytes."
