"""The MCP servers the MCP tests talk to, started by the suite: our own
(tests/tools/mcp/tool_server.py) and the reference server
`@modelcontextprotocol/server-everything` (installed by
scripts/ensure-mcp-everything.sh), each over Streamable HTTP (a process on a
free port) and stdio (a command the site's supervisor runs); and servers
that fail: one answering garbage, one that never answers, a port where
nothing listens."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from chat.tools.calls import Outcome, ToolCall
from chat.tools.mcp import McpTools
from chat.tools.mcp.config import ServerConfig
from tests.support.services.daphnes import free_port
from tests.support.services.processes import _die_with_parent
from tests.support.waiting import until_sync

ROOT = Path(__file__).resolve().parents[3]
EVERYTHING = (
    ROOT
    / "tests/tools/mcp/everything/node_modules/@modelcontextprotocol/server-everything"
    / "dist/index.js"
)
LOG = ROOT / "test-artifacts" / "mcp-servers.log"
OUR_STDIO = (sys.executable, ("-m", "tests.tools.mcp.tool_server", "stdio"))
EVERYTHING_STDIO = ("node", (str(EVERYTHING), "stdio"))


def config(pk: int, slug: str, **fields: Any) -> ServerConfig:
    """A server as the client sees it (no row needed)."""
    transport = "stdio" if "command" in fields else "http"
    return replace(
        ServerConfig(pk=pk, slug=slug, name=slug, transport=transport, timeout=20),
        **fields,
    )


async def call(
    tools: McpTools, name: str, deadline: float = 30, **arguments: object
) -> Outcome:
    """The outcome of a call of the tool the model knows as `name`."""
    spec = next(spec for spec in tools.specs if spec.name == name)
    return await tools.run(
        spec, ToolCall("c1", name, json.dumps(arguments)), deadline=deadline
    )


def stdio(
    pk: int, slug: str, command: tuple[str, tuple[str, ...]], **fields: Any
) -> ServerConfig:
    return config(pk, slug, command=command[0], args=command[1], **fields)


def _answers(url: str, process: subprocess.Popen[bytes]) -> bool:
    assert process.poll() is None, LOG.read_text()[-3000:]
    try:
        httpx.get(url, timeout=1)
    except httpx.TransportError:
        return False
    return True


def serve(
    command: list[str], env: dict[str, str] | None = None, port: int | None = None
) -> Iterator[str]:
    """Runs an MCP server on `port` (a free one by default); yields its
    endpoint."""
    port = port or free_port()
    LOG.parent.mkdir(exist_ok=True)
    with LOG.open("ab") as out:
        process = subprocess.Popen(
            [part.replace("{port}", str(port)) for part in command],
            cwd=ROOT,
            env={**os.environ, "PORT": str(port), **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent(15),
        )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        until_sync(lambda: _answers(url, process), f"{command[0]} listens", timeout=30)
        yield url
    finally:
        process.terminate()
        process.wait(10)


class _Garbage(http.server.BaseHTTPRequestHandler):
    """Answers every request 200 with a body that is not JSON-RPC."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = b"<html>this is not JSON</html>"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_DELETE = do_POST  # noqa: N815

    def log_message(self, *args: Any) -> None:
        pass


def garbage_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Garbage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


def hanging_server() -> Iterator[str]:
    """Takes connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    finally:
        listener.close()
