"""Faults the simulator injects, the same for both protocols (see the package doc)."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from chat.simulator.config import RUNNER_STOPPED, SERVER_BUSY, SimulatorConfig


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Faults:
    status: int | None = None
    status_message: str | None = None
    cut_after: int | None = None
    error_after: int | None = None
    malformed_after: int | None = None

    @property
    def mid_stream(self) -> bool:
        faults = (self.cut_after, self.error_after, self.malformed_after)
        return any(n is not None for n in faults)


def take_faults(config: SimulatorConfig) -> Faults:
    """The faults for this request, counting down ``fault_requests``."""
    if config.fault_requests is not None:
        if config.fault_requests <= 0:
            return Faults()
        config.fault_requests -= 1
    return Faults(
        status=config.status,
        status_message=config.status_message,
        cut_after=config.cut_after,
        error_after=config.error_after,
        malformed_after=config.malformed_after,
    )


def status_text(status: int, message: str | None) -> str:
    if message is not None:
        return message
    if status == 503:
        return SERVER_BUSY
    if status >= 500:
        return RUNNER_STOPPED
    return f"simulated error {status}"


def cut_connection(request: web.Request) -> None:
    # close() (not abort()) so the tokens already written still reach the
    # client; the body simply stops without its terminating chunk.
    transport = request.transport
    if transport is not None:
        transport.close()
