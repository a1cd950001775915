"""Chat fixtures (a pytest plugin, loaded with ``-p tests.support.plugins.fixtures``):
the
simulated model server and conversations that talk to it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from chat.simulator import ChatLogEntry, SimulatorConfig, SimulatorServer
from tests.support.waiting import generations_ended, until

# Fast by default; tests that need a visible stream slow it down.
TEST_CONFIG = {"tps": 0.0, "ttft_ms": 0.0, "think_tokens": 8, "answer_tokens": 30}


class Simulator:
    """The running simulator, reset for each test."""

    def __init__(self, server: SimulatorServer) -> None:
        self.server = server

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def config(self) -> SimulatorConfig:
        return self.server.config

    @property
    def log(self) -> list[ChatLogEntry]:
        return self.server.log

    @property
    def asked(self) -> list[ChatLogEntry]:
        """The chat requests that asked for an answer. A preload (an Ollama chat
        without messages) is left out: the page asks for one when the user opens
        a conversation or types, and it may reach the simulator after the
        question it preceded."""
        return [entry for entry in self.log if not entry.load_only]

    @property
    def loads(self) -> list[ChatLogEntry]:
        """The preloads (Ollama chats without messages)."""
        return [entry for entry in self.log if entry.load_only]

    @property
    def ps_requests(self) -> int:
        return self.server.state.ps_requests

    async def wait_for_end(self) -> ChatLogEntry:
        """The last chat request, once the simulator has finished with it."""

        def ended() -> ChatLogEntry | None:
            log = self.log
            return log[-1] if log and log[-1].ended is not None else None

        return await until(ended, "the simulator never saw the end")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_async_test(item):
            item.fixturenames.append("_stop_runner")  # type: ignore[attr-defined]


def is_async_test(item: pytest.Item) -> bool:
    """The test runs in an event loop (Hypothesis wraps an async test in a sync
    function: look inside)."""
    function = getattr(item, "function", None)
    inner = getattr(getattr(function, "hypothesis", None), "inner_test", None)
    return asyncio.iscoroutinefunction(function) or asyncio.iscoroutinefunction(inner)


@pytest.fixture
async def _stop_runner() -> Any:
    """Each async test runs its own event loop. The channel layer keeps
    loop-bound state (channels-redis' receive lock), so each test gets a fresh
    layer, and the runner's tasks are stopped while their loop still runs.

    First every answer's task is let finish its after-work (the ticket, the
    calibration, the wake-ups come after the final frames): cut off by the end
    of the loop, it would write into the next test's database."""
    from channels.layers import channel_layers

    from chat.live.engine.runner import runner

    # The one reset: channels' own cache of the process's layer. Everything of
    # ours that is bound to a loop is in its `chat.live.engine.loop_state.LoopState`: a
    # new loop gets a new one, and the shutdown below closes it.
    channel_layers.backends.clear()
    yield
    await generations_ended()
    await runner.shutdown()


@pytest.fixture(scope="session")
def _simulator_server() -> Iterator[SimulatorServer]:
    server = SimulatorServer(SimulatorConfig(**TEST_CONFIG)).start()  # type: ignore[arg-type]
    yield server
    server.stop()


@pytest.fixture
def simulator(_simulator_server: SimulatorServer) -> Iterator[Simulator]:
    _simulator_server.reset()
    yield Simulator(_simulator_server)
    _simulator_server.reset()


@pytest.fixture
def demo_profile(simulator: Simulator, db: Any) -> Any:
    from chat.models import ModelProfile

    return ModelProfile.objects.create(
        tag="qwen3-demo:8b",
        base_url=simulator.url,
        supports_thinking=True,
        supports_tools=True,  # the simulator's qwen3-demo lists "tools"
        context_length=8192,
        is_demo=True,
    )


@pytest.fixture
def conversation(alice: Any, demo_profile: Any) -> Any:
    from chat.models import Conversation

    return Conversation.objects.create(owner=alice, model_profile=demo_profile)


@pytest.fixture
def db_conversation_without_model(alice: Any) -> Any:
    from chat.models import Conversation

    return Conversation.objects.create(owner=alice)
