"""MCP servers as a `ToolSource`: the tools a user may use in a conversation
(`offer`, `tools_for`) and their runs (`McpTools.run`).

A run checks what it can before the server is asked (the spec is one this
offering made, the arguments are a JSON object that fits the tool's JSON
Schema), then calls the tool on the tools loop (`chat.tools.mcp.thread`)
under the server's timeout and the turn's deadline, whichever is shorter.
Whatever the server does (down, hanging, garbage, an error, 50 MB) the run
gives an `Outcome`; only a cancellation propagates."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.conf import settings
from jsonschema.exceptions import best_match
from mcp import types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from chat.tools.calls import Outcome, ToolCall, ToolSpec
from chat.tools.mcp.catalog import Listed, listed_tools, model_name
from chat.tools.mcp.config import ServerConfig, user_headers
from chat.tools.mcp.messages import TooLarge
from chat.tools.mcp.results import failed, outcome_of
from chat.tools.mcp.sessions import in_session
from chat.tools.mcp.stdio import ServerDown
from chat.tools.mcp.thread import on_tools_loop

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Reachable:
    """A server a user may use, with the headers their calls carry."""

    config: ServerConfig
    headers: Mapping[str, str]


def reachable_by(
    user: AbstractBaseUser | AnonymousUser, slugs: Collection[str] | None = None
) -> list[Reachable]:
    """The enabled servers `user` may use (of `slugs`, when given: the servers
    a conversation turned on), with the user's credentials. A database read."""
    from chat.models import ToolCredential, ToolServer

    servers = ToolServer.objects.usable_by(user)
    if slugs is not None:
        servers = servers.filter(slug__in=slugs)
    credentials = {
        each.server_id: each
        for each in ToolCredential.objects.of(user).filter(server__in=servers)
    }
    return [
        Reachable(
            ServerConfig.of(server), user_headers(server, credentials.get(server.pk))
        )
        for server in servers
    ]


@dataclass
class McpTools:
    """The MCP tools offered in one turn, and the source that runs them."""

    specs: list[ToolSpec] = field(default_factory=list)
    # Servers whose tools could not be listed, by name: why.
    unavailable: dict[str, str] = field(default_factory=dict)
    _runs: dict[str, tuple[Reachable, Listed]] = field(default_factory=dict)

    async def run(self, spec: ToolSpec, call: ToolCall, *, deadline: float) -> Outcome:
        offered = self._runs.get(spec.name)
        if offered is None or offered[0].config.source != spec.source:
            return failed(f"there is no tool named {spec.name!r} here")
        server, listed = offered
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError as error:
            return failed(f"the arguments are not JSON ({error})")
        if not isinstance(arguments, dict):
            return failed("the arguments must be a JSON object")
        mismatch = best_match(listed.validator.iter_errors(arguments))
        if mismatch is not None:
            where = "/".join(map(str, mismatch.absolute_path)) or "the arguments"
            return failed(f"{where} do not fit the tool's schema: {mismatch.message}")
        timeout = max(0.0, min(deadline, server.config.timeout))
        limit = int(settings.TOOL_RESULT_MAX_CHARS)
        return await on_tools_loop(
            _call(server, listed.tool.name, arguments, timeout, limit)
        )


async def offer(
    servers: list[Reachable], tools: Collection[str] | None = None
) -> McpTools:
    """The tools of `servers` (of `tools`, by the names the model sees, when
    given: those a conversation turned on). A server that cannot list its
    tools in time is left out, and said so in `unavailable`."""
    listings = await on_tools_loop(_list_all(servers))
    offered = McpTools()
    for server, listing in zip(servers, listings, strict=True):
        if isinstance(listing, str):
            offered.unavailable[server.config.name] = listing
            continue
        for listed in listing:
            spec = _spec(server.config, listed)
            if spec.name in offered._runs or (
                tools is not None and spec.name not in tools
            ):
                continue
            offered.specs.append(spec)
            offered._runs[spec.name] = (server, listed)
    return offered


async def tools_for(
    user: AbstractBaseUser | AnonymousUser,
    *,
    servers: Collection[str] | None = None,
    tools: Collection[str] | None = None,
) -> McpTools:
    """The MCP tools `user` may use, of the `servers` (slugs) and `tools`
    (names) a conversation turned on."""
    reachable = await sync_to_async(reachable_by)(user, servers)
    return await offer(reachable, tools)


def _spec(config: ServerConfig, listed: Listed) -> ToolSpec:
    tool = listed.tool
    title = tool.title or (tool.annotations.title if tool.annotations else None)
    return ToolSpec(
        name=model_name(config.slug, tool.name),
        source=config.source,
        tool=tool.name,
        title=title or tool.name,
        description=tool.description or "",
        parameters=dict(tool.input_schema),
        needs_approval=config.needs_approval_for(tool.name),
    )


async def _list_all(servers: list[Reachable]) -> list[list[Listed] | str]:
    async def listing(server: Reachable) -> list[Listed] | str:
        try:
            return await listed_tools(server.config, server.headers)
        except Exception as error:  # noqa: BLE001 - the server is left out, and why said
            reason = _why(error, server.config.timeout)
            log.warning("MCP server %s lists no tools: %s", server.config.slug, reason)
            return reason

    return list(await asyncio.gather(*map(listing, servers)))


async def _call(
    server: Reachable, tool: str, arguments: dict[str, Any], seconds: float, limit: int
) -> Outcome:
    """On the tools loop: the call, and its outcome (cut there too: a 50 MB
    text is sliced on this loop, not the caller's)."""
    request = types.CallToolRequest(
        params=types.CallToolRequestParams(name=tool, arguments=arguments)
    )
    try:
        async with asyncio.timeout(seconds):
            # Not `call_tool`: it lists the tools again in a new session, to
            # check structured content that is not passed on here.
            result = await in_session(
                server.config,
                server.headers,
                lambda session: session.send_request(request, types.CallToolResult),
            )
    except Exception as error:  # noqa: BLE001 - every failure is an outcome
        return failed(_why(error, seconds))
    return outcome_of(result, limit)


def _why(error: BaseException, timeout: float) -> str:
    """What went wrong, for the model and the user."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if isinstance(error, TimeoutError):
        return f"the server did not answer within {timeout:g} s"
    if isinstance(error, MCPError):
        return f"the server answered with an error: {error.error.message}"
    if isinstance(error, ValidationError):
        return "the server's answer is not a valid MCP result"
    if isinstance(error, ServerDown | TooLarge):
        return str(error)
    return f"the server could not be reached ({type(error).__name__}: {error})"
