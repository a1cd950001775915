"""The simulator app (both protocols and `/_sim/*`) and the ways to run it."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web

from chat.simulator.config import ConfigError, SimulatorConfig, update_config
from chat.simulator.faults import ApiError
from chat.simulator.ollama import add_routes as add_ollama_routes
from chat.simulator.openai import add_routes as add_openai_routes
from chat.simulator.state import STATE, ChatLogEntry, SimulatorState
from chat.simulator.wire import error_response, json_response, read_json


def create_app(config: SimulatorConfig | None = None) -> web.Application:
    """The simulator as an aiohttp application (state under ``app[STATE]``)."""
    app = web.Application()
    app[STATE] = SimulatorState(config if config is not None else SimulatorConfig())
    add_ollama_routes(app)
    add_openai_routes(app)
    app.router.add_get("/_sim/log", _sim_log)
    app.router.add_post("/_sim/reset", _sim_reset)
    app.router.add_get("/_sim/config", _sim_get_config)
    app.router.add_post("/_sim/config", _sim_set_config)
    return app


async def _sim_log(request: web.Request) -> web.Response:
    entries = request.app[STATE].entries()
    return json_response({"requests": [e.to_dict() for e in entries]})


async def _sim_reset(request: web.Request) -> web.Response:
    request.app[STATE].reset()
    return json_response({"ok": True})


async def _sim_get_config(request: web.Request) -> web.Response:
    return json_response(dataclasses.asdict(request.app[STATE].config))


async def _sim_set_config(request: web.Request) -> web.Response:
    state = request.app[STATE]
    try:
        changes = await read_json(request)
        if not isinstance(changes, dict):
            raise ConfigError("expected a JSON object of config fields")
        update_config(state.config, changes)
    except (ApiError, ConfigError) as exc:
        return error_response(400, str(exc))
    return json_response(dataclasses.asdict(state.config))


async def start_site(
    app: web.Application,
    host: str,
    port: int,
    *,
    shutdown_timeout: float = 1.0,
    access_log: bool = False,
) -> tuple[web.AppRunner, str]:
    """Serve ``app`` on host:port (0 = any free port); returns (runner, url)."""
    kwargs: dict[str, Any] = {} if access_log else {"access_log": None}
    runner = web.AppRunner(
        app,
        handler_cancellation=True,  # a client going away stops its generation
        shutdown_timeout=shutdown_timeout,
        **kwargs,
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0]
    url_host = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    return runner, f"http://{url_host}:{bound[1]}"


async def serve(
    config: SimulatorConfig,
    host: str = "127.0.0.1",
    port: int = 11434,
    *,
    on_ready: Callable[[str], None] | None = None,
    access_log: bool = False,
    handle_signals: bool = True,
) -> None:
    """Run the simulator until cancelled or, from the main thread, SIGINT/SIGTERM."""
    runner, url = await start_site(
        create_app(config), host, port, shutdown_timeout=2.0, access_log=access_log
    )
    stop = asyncio.Event()
    if handle_signals:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
    try:
        if on_ready is not None:
            on_ready(url)
        await stop.wait()
    finally:
        await runner.cleanup()


class SimulatorServer:
    """The simulator in a background thread with its own event loop."""

    def __init__(
        self,
        config: SimulatorConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.app = create_app(config)
        self.host = host
        self.port = port
        self.url = ""
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def state(self) -> SimulatorState:
        return self.app[STATE]

    @property
    def config(self) -> SimulatorConfig:
        return self.state.config

    @property
    def log(self) -> list[ChatLogEntry]:
        return self.state.entries()

    def reset(self) -> None:
        self.state.reset()

    def start(self) -> SimulatorServer:
        self._thread = threading.Thread(
            target=self._run, name="ollama-simulator", daemon=True
        )
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._thread = None

    def __enter__(self) -> SimulatorServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to start() if it failed early
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        runner, self.url = await start_site(self.app, self.host, self.port)
        self.port = int(self.url.rsplit(":", 1)[1])
        self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            await runner.cleanup()
