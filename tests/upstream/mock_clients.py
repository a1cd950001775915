"""The model server clients of `chat.upstream` over httpx's mock transport, for
the Ollama and OpenAI clients' tests (tests/upstream/ollama/, tests/upstream/openai/):
an HTTP client per fake server (fake_servers.py), closed when the test ends, and
a whole answer collected."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from typing import Any

import httpx

from chat.upstream import Event, OllamaClient, OpenAIClient
from tests.upstream.fake_servers import Server

TIMEOUT = httpx.Timeout(5, read=300)


@asynccontextmanager
async def mock_http() -> AsyncIterator[Callable[[Server], httpx.AsyncClient]]:
    """A function giving an HTTP client that asks `server`; all closed at the end."""
    clients: list[httpx.AsyncClient] = []

    def http_for(server: Server) -> httpx.AsyncClient:
        http = httpx.AsyncClient(
            transport=httpx.MockTransport(server.handler), timeout=TIMEOUT
        )
        clients.append(http)
        return http

    yield http_for
    for http in clients:
        await http.aclose()


async def collect(
    client: OllamaClient | OpenAIClient, model: str, **kwargs: Any
) -> list[list[Event]]:
    """The batches of events of `model`'s whole answer to "hi"."""
    kwargs = {"think": None, "options": {}, **kwargs}
    messages = [{"role": "user", "content": "hi"}]
    async with aclosing(client.chat(model, messages, **kwargs)) as stream:
        return [batch async for batch in stream]
