"""MCP servers as a source of tools, with the official `mcp` SDK.

An admin adds servers (`chat.models.ToolServer`): a Streamable HTTP address,
or a command the site runs over stdio. `tools_for(user, ...)` gives the
`ToolSpec`s a user may use in a conversation (named `<server slug>__<tool>`)
and the `ToolSource` that runs them (`McpTools`).

By job: `source` (what is offered, and a run), `catalog` (tool lists, kept a
while; the names the model sees), `results` (a result as an `Outcome`),
`sessions` (a session with a server, by transport), `pool` (Streamable
HTTP sessions kept for the next call), `transports` (the wires), `messages`
(each message held to its limits, a large one handed to a worker),
`oversize` (what that worker does), `stdio` (the supervised processes),
`thread` (the loop every MCP connection lives on), `config` (a server's row
as plain values)."""

from __future__ import annotations

from chat.tools.mcp.source import McpTools, Reachable, offer, reachable_by, tools_for

__all__ = ["McpTools", "Reachable", "offer", "reachable_by", "tools_for"]
