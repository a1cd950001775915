"""The admission tests' limits and conversations, for the turn's slot tests
(`test_slots.py`, `test_tool_turns.py`), and the probe, a source of tools."""

from __future__ import annotations

from tests.live.engine.admission.conftest import conversations, limits
from tests.live.engine.turn.tools_source import probe

__all__ = ["conversations", "limits", "probe"]
