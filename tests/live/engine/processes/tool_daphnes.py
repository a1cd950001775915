"""The probe's tools (tests/live/engine/turn/tools_source.py) in a Daphne
process: imported by the toolbox there (`tool_settings.py`), registered as
the source `probe`, which a test's conversation switches on."""

from __future__ import annotations

from chat.tools import toolbox
from tests.live.engine.turn.tools_source import SOURCE, Probe

toolbox.register(SOURCE, Probe().offers)
