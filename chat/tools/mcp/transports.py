"""The wires to an MCP server, each holding to a size limit before the bytes
are read (`MCP_MESSAGE_MAX_BYTES`): Streamable HTTP through the SDK's client
with a capped `httpx2` transport, and stdio through our own line reader.

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
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter
from pydantic import ValidationError

from chat.tools.mcp.config import ServerConfig


class TooLarge(Exception):
    """The server sent more than `MCP_MESSAGE_MAX_BYTES` for one message."""


class _Capped(httpx2.AsyncByteStream):
    def __init__(self, stream: httpx2.AsyncByteStream, limit: int) -> None:
        self.stream, self.limit = stream, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.stream:
            seen += len(chunk)
            if seen > self.limit:
                raise TooLarge(f"the server sent more than {self.limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self.stream.aclose()


class _CappedTransport(httpx2.AsyncHTTPTransport):
    """A response's body, JSON or a stream of events, ends in an error past
    `limit` bytes (a per-call session's stream carries one call's answer)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await super().handle_async_request(request)
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.limit:
            await response.aclose()
            raise TooLarge(f"the server would send {length} bytes")
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _Capped(response.stream, self.limit)
        return response


@asynccontextmanager
async def http_session(
    config: ServerConfig, headers: Mapping[str, str], limit: int
) -> AsyncIterator[ClientSession]:
    """A session of its own for one call (or one listing), with the user's
    headers: see chat/tools/mcp/sessions.py for why not a pooled one."""
    timeout = httpx2.Timeout(config.timeout)
    async with (
        httpx2.AsyncClient(
            headers=dict(headers), timeout=timeout, transport=_CappedTransport(limit)
        ) as client,
        streamable_http_client(
            config.url, http_client=client, max_sse_event_size=limit
        ) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def line_streams(
    process: asyncio.subprocess.Process, ended: asyncio.Event
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
            if not line.strip():
                continue
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
