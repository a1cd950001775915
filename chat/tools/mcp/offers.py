"""MCP servers in the registry of tool sources (`chat.tools.toolbox`): one
offer per server a user may use, its tools listed over the network (kept a
while: `catalog`). A server that cannot list its tools now is offered with
none and says why (`McpTools.unavailable`): a turn goes on without it and
tells the user; the tools menu still shows it, to be switched on or off.

The menu does not wait on a slow server for long (`MENU_SECONDS`): the page
it is drawn on would."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Any

from asgiref.sync import sync_to_async

from chat.tools import toolbox
from chat.tools.mcp.source import Reachable, offer, reachable_by

# How long the tools menu waits for a server's list, at most.
MENU_SECONDS = 3.0


async def offers(user: Any, sources: Collection[str] | None) -> list[toolbox.Offer]:
    """The servers `user` may use (of `sources`, when given), each an offer."""
    reachable = await sync_to_async(reachable_by)(user)
    if sources is None:
        reachable = [_hurried(server) for server in reachable]
    else:
        reachable = [s for s in reachable if s.config.source in sources]
    if not reachable:
        return []
    tools = await offer(reachable)
    return [
        toolbox.Offer(
            server.config.source,
            server.config.name,
            tools,
            [spec for spec in tools.specs if spec.source == server.config.source],
            tools.unavailable.get(server.config.name, ""),
        )
        for server in reachable
    ]


def _hurried(server: Reachable) -> Reachable:
    config = replace(server.config, timeout=min(server.config.timeout, MENU_SECONDS))
    return replace(server, config=config)


toolbox.register("mcp", offers)
