"""Reading a streamed answer's body, whatever its wire format.

Each backend has a reader that turns network reads into `Event`s (NDJSON for
Ollama, SSE for OpenAI-compatible servers); `stream_events` sends the request,
retries a busy server before the answer starts, yields one list of events per
network read, and maps transport failures by the stage they happened at. It is
also where the server's text is made storable, once for every backend
(`events.cleaned`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, Protocol

import httpx

from chat.upstream.events import (
    Event,
    Stage,
    UpstreamError,
    cleaned,
    error_for_transport,
)
from chat.upstream.retry import busy_retried

HTTP_ERRORS = (httpx.RequestError, httpx.InvalidURL)


class BodyReader(Protocol):
    """The decoding state of one answer's body."""

    @property
    def finished(self) -> bool:
        """The last event (the done chunk, `[DONE]`) was read."""
        ...

    def feed(self, data: bytes) -> tuple[list[Event], UpstreamError | None]:
        """The events of one network read, and an error to raise after them."""
        ...

    def close(self) -> tuple[list[Event], UpstreamError | None]:
        """The events of the body's end, and the error to raise (the body ended
        before the last event)."""
        ...


async def stream_events(
    http: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    headers: Mapping[str, str],
    status_error: Callable[[httpx.Response], Awaitable[UpstreamError]],
    reader: BodyReader,
    base_url: str,
    asked: Callable[[], None] | None = None,
) -> AsyncGenerator[list[Event], None]:
    """POST `body` and yield, per network read, the non-empty list of its events.

    The list holding `Finished` is the last; resuming after it only waits for
    the end of the body so that the connection goes back to the pool. Closing
    the generator (use `contextlib.aclosing`) closes the request, which is how a
    model server learns to stop. Raises `UpstreamError`, also after events.
    """
    stage: Stage = "request"
    try:
        async with busy_retried(
            http, url, body, headers, status_error, asked=asked
        ) as response:
            stage = "waiting"
            async for data in response.aiter_bytes():
                if reader.finished:
                    return  # bytes after the last event: nothing more to read
                stage = "streaming"
                events, error = reader.feed(data)
                if events:
                    yield cleaned(events)
                if error is not None:
                    raise error
            if not reader.finished:
                events, error = reader.close()
                if events:
                    yield cleaned(events)
                if error is not None:
                    raise error
    except HTTP_ERRORS as exc:
        if not reader.finished:
            raise error_for_transport(
                exc, base_url=base_url, stage=stage, timeout=http.timeout
            ) from exc
