"""The admission tests' limits and conversations, for the turn's slot tests
(`test_slots.py`, `test_tool_turns.py`), the probe, a source of tools, and
our MCP test server (`test_real_sources.py`)."""

from __future__ import annotations

from tests.live.engine.admission.conftest import conversations, limits
from tests.live.engine.turn.tools_source import probe
from tests.tools.mcp.conftest import _fresh_tools_loop, our_http

__all__ = ["_fresh_tools_loop", "conversations", "limits", "our_http", "probe"]
