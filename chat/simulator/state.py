"""What one simulator app keeps: the live config, the request log, the loaded models."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from chat.simulator.config import FOREVER_S, SimModel, SimulatorConfig


@dataclass
class ChatLogEntry:
    """One chat request (``/api/chat`` or ``/v1/chat/completions``), updated
    live while it streams."""

    body: Any
    started: float
    protocol: str = "ollama"  # or "openai"
    status: int = 200
    model: str | None = None
    thinking: bool = False
    tokens_sent: int = 0
    done_reason: str | None = None
    fault: str | None = None
    load_only: bool = False  # Ollama: a chat without messages (a preload)
    disconnected: bool = False
    finished: bool = False
    ended: float | None = None
    times: list[float] = field(default_factory=list)
    # Pictures and documents the request carried (chat.simulator.received).
    received: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def end(self, *, finished: bool) -> None:
        self.finished = finished
        self.ended = time.time()


@dataclass
class Loaded:
    model: SimModel
    num_ctx: int
    ready_at: float  # loop time at which loading is complete
    expires_at: float  # wall-clock time


class SimulatorState:
    """Live config, request log and loaded models of one simulator app."""

    def __init__(self, config: SimulatorConfig) -> None:
        self.config = config
        self._initial = copy.deepcopy(config)
        self._lock = threading.Lock()
        self._log: deque[ChatLogEntry] = deque(maxlen=config.log_size)
        self.loaded: dict[str, Loaded] = {}
        self.ps_requests = 0  # GET /api/ps calls answered

    def record(self, entry: ChatLogEntry) -> None:
        with self._lock:
            if self._log.maxlen != self.config.log_size:
                self._log = deque(self._log, maxlen=self.config.log_size)
            self._log.append(entry)

    def entries(self) -> list[ChatLogEntry]:
        with self._lock:
            return list(self._log)

    async def load(self, model: SimModel, num_ctx: int) -> None:
        """Mark `model` loaded, waiting ``load_ms`` if it was cold (or reloads)."""
        loop = asyncio.get_running_loop()
        loaded = self.loaded.get(model.name)
        cold = (
            loaded is None
            or loaded.expires_at <= time.time()
            or loaded.num_ctx != num_ctx
            or loaded.model != model
        )
        if loaded is None or cold:
            ready_at = loop.time() + self.config.load_ms / 1000
            loaded = Loaded(model, num_ctx, ready_at, time.time() + FOREVER_S)
            self.loaded[model.name] = loaded
        delay = loaded.ready_at - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)

    def touch(self, model: SimModel, keep_alive_s: float) -> None:
        """Start the keep-alive countdown when a request ends (0 unloads at once)."""
        loaded = self.loaded.get(model.name)
        if loaded is None:
            return
        if keep_alive_s <= 0:
            self.loaded.pop(model.name, None)
        else:
            loaded.expires_at = time.time() + keep_alive_s

    def reset(self) -> None:
        """Clear the log and loaded models; restore the initial config in place."""
        with self._lock:
            self._log.clear()
            self.loaded.clear()
            self.ps_requests = 0
            for f in dataclasses.fields(self._initial):
                value = copy.deepcopy(getattr(self._initial, f.name))
                setattr(self.config, f.name, value)


STATE = web.AppKey("simulator_state", SimulatorState)
