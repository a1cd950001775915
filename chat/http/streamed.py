"""A response body made by a sync generator, served one piece at a time.

Given a sync iterator under ASGI, Django first reads all of it into a list in
the one thread that runs every sync view and database call of the process
(`StreamingHttpResponse.__aiter__`): a large export or file would sit whole in
memory and hold that thread until read. Under ASGI the pieces are instead
taken one at a time, each in a worker thread; under WSGI (the test client) the
generator is served as it is."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import TypeVar

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest

Piece = TypeVar("Piece", bytes, str)


def streamed(
    request: HttpRequest, pieces: Iterator[Piece], *, reads_database: bool
) -> Iterator[Piece] | AsyncIterator[Piece]:
    """`pieces` as a response body for `request`. `reads_database`: each piece
    is taken in the thread that holds the request's database connection, else
    in any worker thread (file reads, which must not queue behind queries)."""
    if isinstance(request, ASGIRequest):
        return _one_at_a_time(pieces, reads_database)
    return pieces


async def _one_at_a_time(
    pieces: Iterator[Piece], thread_sensitive: bool
) -> AsyncIterator[Piece]:
    take = sync_to_async(lambda: next(pieces, None), thread_sensitive=thread_sensitive)
    reading: asyncio.Future[Piece | None] | None = None
    try:
        while True:
            # Shielded: a client that goes away cancels the wait, not the read,
            # which a worker thread finishes before the generator is closed
            # (closing it mid-read raises "generator already executing").
            reading = asyncio.ensure_future(take())
            piece = await asyncio.shield(reading)
            reading = None
            if piece is None:
                return
            yield piece
    finally:
        if reading is not None:
            with contextlib.suppress(Exception):
                await reading
        close = getattr(pieces, "close", None)
        if close is not None:
            await sync_to_async(close, thread_sensitive=thread_sensitive)()
