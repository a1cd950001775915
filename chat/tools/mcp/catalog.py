"""The tools an MCP server offers, asked on the tools loop and kept for
`MCP_TOOLS_TTL` seconds in this site process (per server, version of its
row and headers: a user's credential may change what a server lists), and
the names the model sees for them."""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings
from jsonschema import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from mcp import ClientSession, types

from chat.tools.mcp.config import ServerConfig, headers_digest
from chat.tools.mcp.sessions import in_session

# The model servers' limit on a function's name (OpenAI's, vLLM's).
NAME_LIMIT = 64
NAME_SEPARATOR = "__"
_NOT_IN_NAMES = re.compile(r"[^a-zA-Z0-9_-]")
# A server that pages its list for ever is not read for ever.
MAX_PAGES = 20


@dataclass(frozen=True, slots=True)
class Listed:
    """A tool as the server listed it, with its arguments' validator."""

    tool: types.Tool
    validator: Validator


_cache: dict[tuple[int, str, str], tuple[float, list[Listed]]] = {}


def model_name(slug: str, tool: str) -> str:
    """`<server slug>__<tool>` in the characters and length the model servers
    take; a name cut or changed gets a digest of the tool's own name, so two
    tools never meet under one name."""
    name = (
        f"{_NOT_IN_NAMES.sub('_', slug)}{NAME_SEPARATOR}{_NOT_IN_NAMES.sub('_', tool)}"
    )
    if name == f"{slug}{NAME_SEPARATOR}{tool}" and len(name) <= NAME_LIMIT:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[: NAME_LIMIT - 9]}_{digest}"


async def listed_tools(
    config: ServerConfig, headers: Mapping[str, str]
) -> list[Listed]:
    """On the tools loop: the server's tools (those whose JSON Schema is
    valid: the model could not call the others either)."""
    key = (config.pk, config.version, headers_digest(headers))
    now = time.monotonic()
    hit = _cache.get(key)
    if hit is not None and now - hit[0] < settings.MCP_TOOLS_TTL:
        return hit[1]
    async with asyncio.timeout(config.timeout):
        tools = await in_session(config, headers, _all_tools)
    listed = [each for each in map(_listed, tools) if each is not None]
    for stale in [k for k in _cache if k[0] == config.pk and k[1] != config.version]:
        del _cache[stale]
    _cache[key] = (now, listed)
    return listed


def forget() -> None:
    """Drop every list kept (tests)."""
    _cache.clear()


async def _all_tools(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor = None
    for _ in range(MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _listed(tool: types.Tool) -> Listed | None:
    schema = tool.input_schema
    try:
        cls = validator_for(schema)
        cls.check_schema(schema)
    except SchemaError:
        return None
    return Listed(tool=tool, validator=cls(schema))
