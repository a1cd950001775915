"""What every API view does, whichever dialect it speaks: no CSRF (a key, not
a cookie, signs the request in), the methods it takes, its refusals in the
dialect's error shape, and the answer's life around the response."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, Literal

from channels.db import database_sync_to_async
from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from chat.api import answers, auth, requests
from chat.api.answers import ApiAnswer
from chat.api.errors import ApiError
from chat.models import ApiKey, ModelProfile

Dialect = Literal["openai", "ollama"]
View = Callable[..., Coroutine[Any, Any, HttpResponseBase]]
KeyView = View

# Silence after which a streamed response opens anyway (and then hears a
# keep-alive comment this often): proxies and clients time idle requests out.
# Not on the token path: a token is written the moment it arrives.
OPEN_AFTER_SECONDS = 5.0
KEEPALIVE_SECONDS = 15.0
# Store the answer as a conversation in the owner's list (else: the key's own
# setting, by default only its figures are kept).
STORE_HEADER = "HTTP_X_CHATSITE_STORE"
TRUE = ("1", "true", "yes", "on")


def api_view(dialect: Dialect, methods: tuple[str, ...]) -> Callable[[KeyView], View]:
    """An API view taking `methods`, called with the request's `ApiKey` after
    the request; every ApiError becomes the dialect's error response."""

    def decorate(view: KeyView) -> View:
        @csrf_exempt
        @functools.wraps(view)
        async def wrapped(request: HttpRequest, *args: object) -> HttpResponseBase:
            try:
                if request.method not in methods:
                    raise ApiError(
                        405,
                        "method_not_allowed",
                        f"Use {' or '.join(methods)} here.",
                    )
                api_key = await auth.authenticate(request)
                response = await view(request, api_key, *args)
            except ApiError as error:
                response = _error_response(dialect, error)
                if error.status == 405:
                    response["Allow"] = ", ".join(methods)
            response["Cache-Control"] = "no-store"
            return response

        return wrapped

    return decorate


def _error_response(dialect: Dialect, error: ApiError) -> HttpResponseBase:
    if dialect == "openai":
        return error.openai_response()
    return error.ollama_response()


def body_of(request: HttpRequest) -> dict[str, object]:
    """The request's JSON object (ApiError 400, 413 otherwise). Read from the
    stream, not `request.body`: Django's own cap on that
    (DATA_UPLOAD_MAX_MEMORY_SIZE) is the pages', and would answer an API
    client with an HTML 400."""
    limit = requests.max_body_bytes()
    length = str(request.META.get("CONTENT_LENGTH") or "")
    if length.isdigit() and int(length) > limit:
        raise ApiError(
            413,
            "request_too_large",
            f"The request body is {int(length):,} bytes; the limit is {limit:,}.",
        )
    # A byte past the limit is enough for `decode` to refuse it.
    return requests.decode(request.read(limit + 1))


async def usable_profiles(api_key: ApiKey) -> list[ModelProfile]:
    """The models the key may ask (the model lists of both dialects)."""
    return await database_sync_to_async(lambda: list(api_key.usable_profiles()))()


def store_asked(request: HttpRequest, api_key: ApiKey) -> bool:
    header = request.META.get(STORE_HEADER)
    if header is None:
        return api_key.store_conversations
    return str(header).strip().lower() in TRUE


async def begin(
    request: HttpRequest, api_key: ApiKey, chat: requests.ChatRequest
) -> ApiAnswer:
    return await answers.begin(api_key, chat, store=store_asked(request, api_key))


async def finished(answer: ApiAnswer) -> ApiAnswer:
    """Wait for the whole answer (a response that is not streamed). The client
    going away cancels this, which stops the answer."""
    try:
        while not answer.finished:
            await answer.wait()
        if answer.error is not None:
            raise answer.error
        return answer
    finally:
        answer.close()


async def opened(answer: ApiAnswer, *, wait_for_text: bool) -> None:
    """Before a streamed response opens: an answer that fails before its first
    token raises its ApiError (so the client gets the status of the fault).
    `wait_for_text`: open only for text or the end (Ollama's way)."""
    try:
        if wait_for_text:
            while not (answer.has_text or answer.finished):
                await answer.wait()
        else:
            await answer.opened(OPEN_AFTER_SECONDS)
    except BaseException:
        answer.close()
        raise
    if answer.error is not None and not (answer.content_chars or answer.thinking_chars):
        answer.close()
        raise answer.error


async def updates(answer: ApiAnswer, keepalive: bytes) -> AsyncIterator[bytes | None]:
    """The answer's life as the response sees it: None when something new
    arrived (`answer.take()` it; the last None comes once it finished), or
    `keepalive` after a silence. However the response ends (the answer done,
    the client gone), the answer is closed: a running one is stopped."""
    try:
        yield None  # what arrived before the response opened
        while not answer.finished:
            if await answer.wait(KEEPALIVE_SECONDS):
                yield None
            elif keepalive:
                yield keepalive
    finally:
        answer.close()


def streaming(
    content: AsyncIterator[bytes], content_type: str
) -> StreamingHttpResponse:
    response = StreamingHttpResponse(content, content_type=content_type)
    # deploy/nginx.conf turns buffering off for the API too; this says it to
    # any other proxy that honours it.
    response["X-Accel-Buffering"] = "no"
    return response
