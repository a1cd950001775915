"""stdio MCP servers: a command the site runs, one process per server in each
site process, on the tools loop (`chat.tools.mcp.thread`). Started on first
use; after it dies (or sends a line over the size limit)
the next call starts a new one; a change of its command restarts it; stopped
with its whole process group when the site process exits.

A process is restarted when it is next needed rather than at once: a
command that fails at start would otherwise be respawned in a loop while
nobody asks for it, and the call that needs it waits for it either way."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal

from mcp import ClientSession
from mcp.client.stdio import get_default_environment

from chat.tools.mcp.config import ServerConfig
from chat.tools.mcp.messages import Limits
from chat.tools.mcp.thread import when_stopping
from chat.tools.mcp.transports import line_streams

log = logging.getLogger(__name__)

# After its stdin closes, a server gets this long to exit; then SIGTERM to its
# process group, the same again, then SIGKILL (the MCP spec's stdio shutdown).
GRACE = 2.0


class ServerDown(Exception):
    """The server's process could not be started or ended; says why."""


class Supervised:
    """One server's process and its session."""

    def __init__(self, config: ServerConfig, limits: Limits) -> None:
        self.config, self.limits = config, limits
        self.session: ClientSession | None = None
        self.error = ""
        self.ready = asyncio.Event()
        self.stopping = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._run())

    @property
    def alive(self) -> bool:
        """Starting or serving (not winding down after its end)."""
        starting = not self.ready.is_set()
        return not self.task.done() and (starting or self.session is not None)

    async def session_ready(self) -> ClientSession:
        await self.ready.wait()
        if self.session is None:
            raise ServerDown(self.error or "the server's process ended")
        return self.session

    async def stop(self) -> None:
        self.stopping.set()
        with contextlib.suppress(Exception):
            await self.task

    async def _run(self) -> None:
        try:
            process = await asyncio.create_subprocess_exec(
                self.config.command,
                *self.config.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                env=get_default_environment() | dict(self.config.env),
                limit=self.limits.max_bytes,
                # Its own process group: `npx` and shells start children,
                # which are stopped with it.
                start_new_session=True,
            )
        except OSError as error:
            self.error = f"the command could not be started: {error}"
            self.ready.set()
            return
        try:
            await self._serve(process)
        except Exception as error:  # noqa: BLE001 - told to every call that waits
            self.error = f"the server failed: {error}"
            log.warning("MCP server %s: %s", self.config.slug, self.error)
        finally:
            self.session = None
            self.ready.set()
            await _stop(process)

    async def _serve(self, process: asyncio.subprocess.Process) -> None:
        ended = asyncio.Event()
        async with (
            line_streams(process, ended, f"mcp:{self.config.slug}") as (
                read,
                write,
            ),
            ClientSession(read, write) as session,
        ):
            async with asyncio.timeout(self.config.timeout):
                await session.initialize()
            self.session = session
            self.ready.set()
            waits = [
                asyncio.ensure_future(event.wait()) for event in (self.stopping, ended)
            ]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
            self.session = None
            if ended.is_set():
                self.error = "the server's process ended"
                log.warning("MCP server %s: its process ended", self.config.slug)


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.stdin is not None:
        process.stdin.close()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
        try:
            async with asyncio.timeout(GRACE):
                await process.wait()
            return
        except TimeoutError:
            continue


class Supervisor:
    """The stdio servers of this site process, by server."""

    def __init__(self) -> None:
        self.running: dict[int, Supervised] = {}
        when_stopping(self.stop_all)

    async def session(self, config: ServerConfig, limits: Limits) -> ClientSession:
        """The server's session, its process started (again) if need be."""
        current = self.running.get(config.pk)
        if (
            current is not None
            and current.alive
            and current.config.launch != config.launch
        ):
            await current.stop()
        if (
            current is None
            or not current.alive
            or current.config.launch != config.launch
        ):
            current = self.running[config.pk] = Supervised(config, limits)
        return await current.session_ready()

    async def stop_all(self) -> None:
        running, self.running = list(self.running.values()), {}
        await asyncio.gather(*(each.stop() for each in running))


supervisor = Supervisor()
