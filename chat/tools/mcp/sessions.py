"""A session with an MCP server, on the tools loop, whatever its transport.

stdio: the supervised process's one session, shared by every call (the
protocol numbers requests, so calls run side by side).

Streamable HTTP: a session lent from the pool (`chat.tools.mcp.pool`), with
the user's headers, or opened for the call when `MCP_HTTP_POOL_SIZE` is 0.
A kept session the server no longer knows (it restarted, or expired it) is
answered HTTP 404 on its id (the Streamable HTTP spec; the request was not
run): the work is done once more in a fresh session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from mcp import ClientSession

from chat.tools.mcp.config import ServerConfig
from chat.tools.mcp.messages import Limits
from chat.tools.mcp.pool import Kept, pool
from chat.tools.mcp.stdio import supervisor

_T = TypeVar("_T")


async def in_session(
    config: ServerConfig,
    headers: Mapping[str, str],
    work: Callable[[ClientSession], Awaitable[_T]],
) -> _T:
    """`work`'s result, done in a session with the server."""
    limits = Limits.now()
    if config.transport == "stdio":
        return await work(await supervisor.session(config, limits))
    while True:
        kept: Kept | None = None
        try:
            async with pool.lent(config, headers, limits) as (session, kept):
                return await work(session)
        except Exception:
            if kept is None or not kept.forgotten.is_set():
                raise
