"""Pooled `httpx.AsyncClient`s, one per model server, for one event loop.

The seam takes plain values (a base URL, the backend's name, how thinking is
switched), never a Django model: `chat.models.ModelProfile.server_settings`
gives them. Which loop a pool belongs to is its owner's business (see
`chat.live.engine.loop_state`).
"""

from __future__ import annotations

import httpx
from django.conf import settings

from chat.upstream.ollama import OllamaClient
from chat.upstream.openai import OpenAIClient, ThinkingControl
from chat.upstream.transport import AiohttpTransport


class ClientPool:
    """One event loop's shared clients, by server. A client's connections belong
    to the loop that opened them: a pool serves one loop only."""

    def __init__(self) -> None:
        self._clients: dict[str, httpx.AsyncClient] = {}

    def http(self, base_url: str) -> httpx.AsyncClient:
        """The shared client for `base_url` (a closed one is replaced)."""
        key = base_url.rstrip("/")
        client = self._clients.get(key)
        if client is None or client.is_closed:
            client = self._clients[key] = _new_client()
        return client

    def ollama(self, base_url: str) -> OllamaClient:
        """An `OllamaClient` for `base_url` over the shared pool."""
        return OllamaClient(base_url, http=self.http(base_url))

    def openai(
        self, base_url: str, thinking: ThinkingControl | None = None
    ) -> OpenAIClient:
        """An `OpenAIClient` for `base_url` over the shared pool."""
        return OpenAIClient(base_url, http=self.http(base_url), thinking=thinking)

    def client_for(
        self,
        *,
        backend: str,
        base_url: str,
        thinking_switch: str = "template",
        think_tags: str = "parse",
    ) -> OllamaClient | OpenAIClient:
        """The client that speaks `backend` ("ollama" or "openai") to `base_url`;
        the thinking values matter to OpenAI-compatible servers only."""
        if backend == "openai":
            return self.openai(base_url, thinking_control(thinking_switch, think_tags))
        return self.ollama(base_url)

    @property
    def clients(self) -> list[httpx.AsyncClient]:
        """The clients made so far (closed ones included)."""
        return list(self._clients.values())

    async def aclose(self) -> None:
        """Close every client (at shutdown); the next call makes new ones."""
        clients, self._clients = self._clients, {}
        for client in clients.values():
            await client.aclose()


def thinking_control(thinking_switch: str, think_tags: str) -> ThinkingControl:
    """How a profile's switch ("template", "soft", "both", "none") turns thinking
    on and off, and how its tags setting ("parse", "close_only", "off") reads
    inline tags."""
    return ThinkingControl(
        template_kwargs=thinking_switch in ("template", "both"),
        soft_switch=thinking_switch in ("soft", "both"),
        parse_tags=think_tags != "off",
        opened=think_tags == "close_only",
    )


def _new_client() -> httpx.AsyncClient:
    timeout = httpx.Timeout(
        connect=settings.UPSTREAM_CONNECT_TIMEOUT,
        # httpx applies this to every read: it bounds the wait for the first
        # token and, once streaming, any silence between tokens.
        read=settings.UPSTREAM_FIRST_TOKEN_TIMEOUT,
        write=10,
        pool=10,
    )
    # aiohttp underneath: a third of httpx's own CPU per streamed read (see
    # `transport`); its sockets have TCP_NODELAY.
    transport = AiohttpTransport(
        limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100),
    )
    # No proxies from the environment: model servers sit on the team's own
    # network, and a proxy in between may buffer the stream.
    return httpx.AsyncClient(transport=transport, timeout=timeout, trust_env=False)
