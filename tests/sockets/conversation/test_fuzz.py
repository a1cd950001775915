"""Hypothesis drives the conversation socket with arbitrary frame sequences.

Valid and invalid JSON, every frame type with random fields and sizes, binary
frames, floods, pauses that let answers stream, all against the simulator (which
is sometimes told to fail). Afterwards the database must be consistent and the
socket open, or closed with a documented code. What it sends and checks is in
fuzzing.py; what it found, in test_found_by_fuzzing.py.

``FUZZ_EXAMPLES`` (default 25) sets how many sequences are tried.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat.models import Conversation
from chatsite.asgi import application
from tests.sockets.conversation.fuzzing import (
    ERROR_CODES,
    MESSAGE_MAX_CHARS,
    QUICK_ANSWERS,
    Session,
    actions,
    check_database,
    check_frames,
    simulator_modes,
    wait_until_idle,
)
from tests.support.communicators import ORIGIN, WebsocketCommunicator

pytestmark = pytest.mark.django_db(transaction=True)


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "25")),
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(actions, min_size=1, max_size=12),
    mode=simulator_modes,
    burst=st.sampled_from([40, 5]),
)
async def test_any_frame_sequence_leaves_a_consistent_database(
    steps, mode, burst, alice, demo_profile, simulator, django_settings_override
):
    django_settings_override(
        MESSAGE_MAX_CHARS=MESSAGE_MAX_CHARS,
        WS_FRAME_BURST=burst,
        WS_FLOOD_CLOSE_AFTER=20,
    )
    behaviour = {**QUICK_ANSWERS, **mode}
    for name, value in behaviour.items():
        setattr(simulator.config, name, value)

    conversation = await Conversation.objects.acreate(
        owner=alice, model_profile=demo_profile
    )
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.pk}/", headers=[ORIGIN]
    )
    communicator.scope["user"] = alice
    connected, _ = await communicator.connect()
    assert connected
    session = Session(communicator, conversation.pk)
    try:
        for step in steps:
            if session.closed_with is not None:
                break
            await session.act(step)
    finally:
        # The consumer handles its frames in order: once it has handled the
        # disconnect, every frame sent before has been handled too.
        await communicator.disconnect(timeout=20)
    await wait_until_idle(conversation.pk)
    await session.drain()
    check_frames(session)
    await check_database(session)


@pytest.fixture
def django_settings_override(settings):
    """Hypothesis reuses function fixtures across examples: set, don't yield."""

    def override(**values: Any) -> None:
        for name, value in values.items():
            setattr(settings, name, value)

    return override


def test_the_fuzzer_knows_every_documented_error_code():
    """The protocol page's list and the fuzzer's agree (so a new code is checked)."""
    from pathlib import Path

    docs = Path(__file__).resolve().parents[3] / "docs"
    protocol = (docs / "protocol.md").read_text()
    for code in ERROR_CODES - {"internal_error"}:
        assert f"`{code}`" in protocol, code
