"""One pooled `httpx.AsyncClient` per model server, per process and event loop."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import httpx
from django.conf import settings

from chat.upstream.ollama import OllamaClient
from chat.upstream.openai import OpenAIClient, ThinkingControl
from chat.upstream.transport import AiohttpTransport

if TYPE_CHECKING:
    from chat.models import ModelProfile

# A client's connections belong to the loop that opened them, so each loop
# (tests run several) gets its own clients.
_clients: dict[asyncio.AbstractEventLoop, dict[str, httpx.AsyncClient]] = {}


def http_client_for(base_url: str) -> httpx.AsyncClient:
    """Return the running loop's shared client for `base_url`; call it in a coroutine.

    Raises `RuntimeError` when no event loop is running.
    """
    loop = asyncio.get_running_loop()
    clients = _clients.get(loop)
    if clients is None:
        _forget_closed_loops()
        clients = _clients[loop] = {}
    key = base_url.rstrip("/")
    client = clients.get(key)
    if client is None or client.is_closed:
        client = clients[key] = _new_client()
    return client


def ollama_client(base_url: str) -> OllamaClient:
    """Return an `OllamaClient` for `base_url` over the shared pool."""
    return OllamaClient(base_url, http=http_client_for(base_url))


def client_for(profile: ModelProfile) -> OllamaClient | OpenAIClient:
    """Return the client that speaks `profile`'s backend, over the shared pool."""
    if profile.backend == "openai":
        return openai_client(profile.base_url, thinking_control(profile))
    return ollama_client(profile.base_url)


def openai_client(
    base_url: str, thinking: ThinkingControl | None = None
) -> OpenAIClient:
    """Return an `OpenAIClient` for `base_url` over the shared pool."""
    return OpenAIClient(base_url, http=http_client_for(base_url), thinking=thinking)


def thinking_control(profile: ModelProfile) -> ThinkingControl:
    """How `profile` turns thinking on and off and reads inline tags."""
    switch, tags = profile.thinking_switch, profile.think_tags
    return ThinkingControl(
        template_kwargs=switch in ("template", "both"),
        soft_switch=switch in ("soft", "both"),
        parse_tags=tags != "off",
        opened=tags == "close_only",
    )


async def aclose_all() -> None:
    """Close the running loop's clients (at shutdown); forget closed loops' ones."""
    _forget_closed_loops()
    clients = _clients.pop(asyncio.get_running_loop(), {})
    for client in clients.values():
        await client.aclose()


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


def _forget_closed_loops() -> None:
    # Their sockets cannot be closed without their loop; dropping them frees them.
    for loop in [loop for loop in _clients if loop.is_closed()]:
        del _clients[loop]
