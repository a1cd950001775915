"""A session with an MCP server, on the tools loop, whatever its transport.

stdio: the supervised process's one session, shared by every call (the
protocol numbers requests, so calls run side by side).

Streamable HTTP: a session of its own for each call, opened with the user's
headers. A pooled session would be a session per user and server (the
credential is in the headers of every request), kept open on the server
with an idle expiry to match and re-opened when the server restarts; per
call, opening costs one round trip for `initialize` and one notification
(a few milliseconds on the team's network; 3-4 ms here, see docs/tools.md),
beside tools that take tenths of seconds to seconds, and a server that
restarted is met fresh by the next call."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from django.conf import settings
from mcp import ClientSession

from chat.tools.mcp.config import ServerConfig
from chat.tools.mcp.stdio import supervisor
from chat.tools.mcp.transports import http_session


@asynccontextmanager
async def session_for(
    config: ServerConfig, headers: Mapping[str, str]
) -> AsyncIterator[ClientSession]:
    limit = int(settings.MCP_MESSAGE_MAX_BYTES)
    if config.transport == "stdio":
        yield await supervisor.session(config, limit)
        return
    async with http_session(config, headers, limit) as session:
        yield session
