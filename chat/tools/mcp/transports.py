"""The wires to an MCP server, each holding to a size limit before the bytes
are read (`MCP_MESSAGE_MAX_BYTES`), a large one made small in a worker
first (`chat.tools.mcp.messages`): Streamable HTTP through the SDK's client
with an `httpx2` transport of ours, and stdio through our own line reader.

Our own stdio reader, not the SDK's `stdio_client`: the SDK joins the pipe's
chunks to its line buffer each time a chunk arrives (`(buffer + chunk)`,
mcp/client/stdio.py), so a 50 MB answer took 104 s to read here; asyncio's
`StreamReader.readline` keeps one growing buffer (0.1 s) and refuses a line
over its limit. And the supervisor (`chat.tools.mcp.stdio`) owns the process:
it sees it die and stops its whole process group."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import MCP_SESSION_ID as SESSION_ID
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter
from pydantic import ValidationError

from chat.tools.mcp.config import ServerConfig
from chat.tools.mcp.messages import Limits, Messages, TooLarge, request_id_of, smaller


class _Transport(httpx2.AsyncHTTPTransport):
    """Each response's messages held to the limits (`Messages`): per message,
    not per response, since a pooled session's event stream (its GET) lives
    as long as the session."""

    def __init__(self, limits: Limits, owner: str, forgotten: asyncio.Event) -> None:
        super().__init__()
        self.limits, self.owner, self.forgotten = limits, owner, forgotten

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await super().handle_async_request(request)
        if response.status_code == 404 and SESSION_ID in request.headers:
            # The spec's word for a session the server no longer knows.
            self.forgotten.set()
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.limits.max_bytes:
            await response.aclose()
            raise TooLarge(f"the server would send {length} bytes")
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        kind = response.headers.get("content-type", "").lower()
        response.stream = Messages(
            response.stream,
            sse=kind.startswith("text/event-stream"),
            limits=self.limits,
            owner=self.owner,
            request_id=request_id_of(request),
        )
        return response


@asynccontextmanager
async def http_session(
    config: ServerConfig,
    headers: Mapping[str, str],
    limits: Limits,
    forgotten: asyncio.Event,
) -> AsyncIterator[ClientSession]:
    """A session with the user's headers, initialised (pooled:
    chat/tools/mcp/pool.py). `forgotten` is set when the server answers 404
    to its id."""
    # The session's reads wait as long as its server's calls may run; a
    # session is pooled by that timeout too (chat/tools/mcp/pool.py).
    timeout = httpx2.Timeout(config.timeout)
    transport = _Transport(limits, f"mcp:{config.slug}", forgotten)
    async with (
        httpx2.AsyncClient(
            headers=dict(headers), timeout=timeout, transport=transport
        ) as client,
        streamable_http_client(
            config.url, http_client=client, max_sse_event_size=limits.max_bytes
        ) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def line_streams(
    process: asyncio.subprocess.Process,
    ended: asyncio.Event,
    owner: str,
) -> AsyncIterator[
    tuple[
        anyio.abc.ObjectReceiveStream[SessionMessage | Exception],
        anyio.abc.ObjectSendStream[SessionMessage],
    ]
]:
    """The session's streams over a stdio server's pipes: one JSON-RPC
        message a line. A line that is not JSON-RPC is handed to the session as
        an error (it logs it and goes on); a line over the reader's limit ends the
        connection (its calls fail; the supervisor starts a new process). `ended`
    is set when the server's output ends, for whatever reason."""
    assert process.stdout is not None and process.stdin is not None
    stdout, stdin = process.stdout, process.stdin
    to_session, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write, from_session = anyio.create_memory_object_stream[SessionMessage](0)

    async def reading() -> None:
        async with to_session:
            try:
                await read_lines()
            finally:
                ended.set()

    async def read_lines() -> None:
        while True:
            try:
                line = await stdout.readline()
            except ValueError:  # over the limit
                return
            if not line:
                return
            if line.isspace():
                continue
            # Read at each line: a process outlives changes of the settings.
            limits = Limits.now()
            if len(line) > limits.large_bytes:
                small = await smaller(
                    line, sse=False, limits=limits, owner=owner, request_id=None
                )
                if small is None:
                    return
                if not small:
                    continue
                line = small
            try:
                message = jsonrpc_message_adapter.validate_json(line)
            except ValidationError as error:
                await to_session.send(error)
                continue
            await to_session.send(SessionMessage(message))

    async def writing() -> None:
        async with from_session:
            async for item in from_session:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                stdin.write(text.encode() + b"\n")
                await stdin.drain()

    async with anyio.create_task_group() as group:
        group.start_soon(reading)
        group.start_soon(writing)
        try:
            yield read, write
        finally:
            group.cancel_scope.cancel()
