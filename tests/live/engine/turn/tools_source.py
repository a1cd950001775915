"""A tiny deterministic source of tools for the engine's tests (the tools'
side of a turn; the model is the simulator): `echo` says its arguments back,
`slow` waits until the test lets it go (and notes a cancel), `broken` fails,
`guarded` needs the user's approval. Registered with the toolbox and switched
on in a conversation by the `probe` fixture."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from chat.tools import toolbox
from chat.tools.calls import Outcome, ToolCall, ToolSpec

SOURCE = "probe"
TEXT = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}


def spec(name: str, *, needs_approval: bool = False) -> ToolSpec:
    return ToolSpec(
        name,
        SOURCE,
        name,
        name.title(),
        f"The {name} tool",
        TEXT,
        needs_approval=needs_approval,
    )


SPECS = [
    spec("echo"),
    spec("slow"),
    spec("broken"),
    spec("guarded", needs_approval=True),
]


class Probe:
    """The source: what it ran, and the gate `slow` waits at."""

    def __init__(self) -> None:
        self.ran: list[ToolCall] = []
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.cancelled = False

    async def run(self, spec: ToolSpec, call: ToolCall, *, deadline: float) -> Outcome:
        self.ran.append(call)
        if spec.tool == "slow":
            self.started.set()
            try:
                await self.gate.wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        if spec.tool == "broken":
            return Outcome(text="Error: the probe is broken.", error="broken")
        return Outcome(text=f"probe says {call.arguments}", preview="probe says")

    async def offers(self, user: Any, sources: Any) -> list[toolbox.Offer]:
        return [toolbox.Offer(SOURCE, "Probe", self, SPECS)]


@pytest.fixture
def probe(conversation) -> Iterator[Probe]:
    """The probe, offered to every conversation and switched on in
    `conversation`."""
    source = Probe()
    toolbox.register(SOURCE, source.offers)
    conversation.tool_choices = {"sources": {SOURCE: True}}
    conversation.save(update_fields=["tool_choices"])
    yield source
    toolbox.unregister(SOURCE)
