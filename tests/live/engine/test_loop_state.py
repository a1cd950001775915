"""One event loop's state (`chat.live.engine.loop_state`): made once per loop, closed
by the runner's shutdown, with what it holds."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from chat.live.engine import admission, loop_state
from chat.live.engine.runner import runner
from chat.models import ModelProfile
from chat.upstream import OllamaClient, OpenAIClient

BASE = "http://ollama.test:11434"


def unsaved_profile(base_url: str, **fields: Any) -> ModelProfile:
    return ModelProfile(
        pk=4242, tag="qwen3:8b", base_url=base_url, context_length=8192, **fields
    )


async def test_one_state_per_loop():
    state = loop_state.current()
    assert loop_state.current() is state
    assert loop_state.existing() is state
    assert state.loop is asyncio.get_running_loop()
    assert loop_state.clients() is state.clients
    assert state.preloads is loop_state.current().preloads


def test_a_new_loop_gets_a_new_state():
    async def get() -> tuple[loop_state.LoopState, httpx.AsyncClient]:
        return loop_state.current(), loop_state.clients().http(BASE)

    first, first_client = asyncio.run(get())
    second, second_client = asyncio.run(get())
    assert first is not second
    assert first.clients is not second.clients
    assert first.preloads is not second.preloads
    # Each event loop gets its own client.
    assert first_client is not second_client
    # States of closed loops are dropped, not kept forever.
    assert list(loop_state._states.values()) == [second]


def test_needs_a_running_loop():
    with pytest.raises(RuntimeError):
        loop_state.current()
    with pytest.raises(RuntimeError):
        loop_state.clients()


async def test_client_for_a_profile_uses_the_loops_pool():
    ollama = loop_state.client_for(unsaved_profile(BASE))
    openai = loop_state.client_for(
        unsaved_profile("http://gpu:8000/v1", backend=ModelProfile.Backend.OPENAI)
    )
    assert isinstance(ollama, OllamaClient)
    assert ollama._http is loop_state.clients().http(BASE)
    assert isinstance(openai, OpenAIClient)
    assert openai._http is loop_state.clients().http("http://gpu:8000/v1")


@pytest.mark.django_db(transaction=True)
async def test_shutdown_closes_preloads_clients_and_the_runners_tasks(
    simulator, demo_profile
):
    simulator.config.load_ms = 60_000  # a load that outlives the test
    await runner.ensure_started()
    state = loop_state.current()
    own = list(state.tasks)
    assert own and not any(task.done() for task in own)
    told: list[dict[str, Any]] = []
    loading = asyncio.Event()

    async def tell(conversation_id: int, frame: dict[str, Any]) -> None:
        told.append(frame)
        loading.set()

    profile = demo_profile
    load = await state.preloads.request(profile, 7, tell)
    assert load is not None and load.task is not None
    await asyncio.wait_for(loading.wait(), 10)  # /api/ps said cold: it loads
    assert state.preloads.tasks() == [load.task]
    clients = state.clients.clients
    assert clients and not any(client.is_closed for client in clients)

    await runner.shutdown()

    # Each of the runner's own tasks ended, or at least was cancelled: one in a
    # Redis call may lose its cancel and outlive the wait (`LoopState.end_tasks`).
    assert all(task.done() or task.cancelled() or task.cancelling() for task in own)
    assert any(task.get_name() == "sweep" and task.cancelled() for task in own)
    assert load.task.cancelled()
    assert state.preloads.running(profile) is None
    assert all(client.is_closed for client in clients)
    # A preload cut by the shutdown tells no end (neither ready nor error).
    assert [frame["state"] for frame in told] == ["loading"]
    assert loop_state.existing() is None
    assert loop_state.current() is not state  # the loop's next use starts anew


async def test_shutdown_without_a_state_makes_none():
    await runner.shutdown()
    assert loop_state.existing() is None


async def test_the_admission_plan_is_handed_over_explicitly():
    """A plan taken with the ticket is used as given: no database call (this
    test has no database) and no queue."""
    heard: list[int] = []

    async def tell(position: int) -> None:
        heard.append(position)

    plan = admission.Plan(admit=[11], positions={})
    await asyncio.wait_for(admission.wait_for_slot(11, 1, tell, first=plan), 5)
    assert heard == []
    assert not hasattr(admission, "_first_decisions")
