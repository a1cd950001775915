"""The probe, a source of tools, for the tool turns the throughput and
metrics tests run through the engine (tests/live/engine/turn/tools_source.py)."""

from __future__ import annotations

from tests.live.engine.turn.tools_source import probe

__all__ = ["probe"]
