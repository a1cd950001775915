"""The API's refusals, and how each dialect says them: OpenAI's error object
(`{"error": {"message", "type", "param", "code"}}`) or Ollama's
(`{"error": "..."}`), with the HTTP status both use."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.http import JsonResponse
from django.utils import timezone

# OpenAI's `type` for each status (its clients map the status to an exception
# class; the type is for people reading the body).
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}

# A fault of the model server (`UpstreamError.code`, or a refused turn's code)
# -> the status that says it to an API client.
_STATUS_OF_CODE = {
    "upstream_unreachable": 503,
    "upstream_busy": 503,
    "interrupted": 503,
    "upstream_timeout": 504,
    "model_not_found": 404,
    "thinking_unsupported": 400,
    "bad_request": 400,
    "malformed": 502,
    "stream_cut": 502,
    "upstream_error": 502,
}


@dataclass
class ApiError(Exception):
    status: int
    code: str
    message: str
    param: str | None = None
    retry_after: int | None = None  # seconds, sent as Retry-After

    def __str__(self) -> str:
        return self.message

    @classmethod
    def from_upstream(cls, code: str, detail: str) -> ApiError:
        """An answer's failure (its `error` frame) as the API says it."""
        return cls(_STATUS_OF_CODE.get(code, 500), code, detail)

    def openai_body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": _TYPES.get(self.status, "server_error"),
                "param": self.param,
                "code": self.code,
            }
        }

    def ollama_body(self) -> dict[str, Any]:
        return {"error": self.message}

    def openai_response(self) -> JsonResponse:
        return self._response(self.openai_body())

    def ollama_response(self) -> JsonResponse:
        return self._response(self.ollama_body())

    def _response(self, body: dict[str, Any]) -> JsonResponse:
        response = JsonResponse(body, status=self.status)
        if self.retry_after is not None:
            response["Retry-After"] = str(self.retry_after)
        if self.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="chatsite"'
        return response


def seconds_until(moment: datetime | None) -> int | None:
    """Whole seconds from now until `moment` (at least 1), for Retry-After."""
    if moment is None:
        return None
    return max(1, math.ceil((moment - timezone.now()).total_seconds()))


def bad_request(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, "invalid_request", message, param)
