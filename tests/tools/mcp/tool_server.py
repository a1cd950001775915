"""A small MCP server of our own, built with the `mcp` SDK, for deterministic
tools in the MCP tests: `echo`, `add`, `slow` (sleeps, for the per-call
timeout), `huge` (a result of N characters, for the size limit), `whoami`
(says whether the request carried the user's token: the header
`X-Tool-Token` over HTTP), `session` (the HTTP session's id), `picture`
(an image and a resource, described rather than passed on), `crash` (the
process ends) and `fails` (a tool error).

Run by the suite (tests/tools/mcp/servers.py) as
`python -m tests.tools.mcp.tool_server stdio` or
`python -m tests.tools.mcp.tool_server http <port>` (Streamable HTTP on
127.0.0.1:<port>/mcp)."""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import EmbeddedResource, ImageContent, TextContent, TextResourceContents

server = MCPServer("chatsite-test-tools")


@server.tool()
def echo(text: str) -> str:
    """Say `text` back."""
    return text


@server.tool()
def add(a: int, b: int) -> str:
    """The sum of two whole numbers."""
    return str(a + b)


@server.tool()
async def slow(seconds: float) -> str:
    """Answer after `seconds`."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(structured_output=False)
def huge(chars: int) -> str:
    """A text of `chars` characters ("x"s, ending in "END"). Text content
    only: a structured copy would double the message."""
    return "x" * max(chars - 3, 0) + "END"


@server.tool()
def whoami(ctx: Context) -> str:
    """Whether the request carried the user's token, and which."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    token = headers.get("x-tool-token") if headers is not None else None
    return f"token: {token}" if token else "no token"


@server.tool()
def session(ctx: Context) -> str:
    """The id of the Streamable HTTP session the call came in (none over
    stdio): one per `initialize` the server was sent."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    found = headers.get("mcp-session-id") if headers is not None else None
    return found or "none"


@server.tool()
def picture() -> list[TextContent | ImageContent | EmbeddedResource]:
    """A caption, a tiny image and a text resource."""
    return [
        TextContent(type="text", text="A caption."),
        ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///notes.txt", mime_type="text/plain", text="notes"
            ),
        ),
    ]


@server.tool()
def crash() -> str:
    """Ends the server's process (over stdio: the site starts another)."""
    os._exit(3)


@server.tool()
def fails() -> str:
    """Always fails."""
    raise ValueError("this tool always fails")


def main() -> None:
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))


if __name__ == "__main__":
    main()
