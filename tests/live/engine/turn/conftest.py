"""The admission tests' limits and conversations, for the turn's slot tests
(`test_slots.py`, `test_tool_turns.py`)."""

from __future__ import annotations

from tests.live.engine.admission.conftest import conversations, limits

__all__ = ["conversations", "limits"]
