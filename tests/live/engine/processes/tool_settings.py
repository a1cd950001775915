"""The site's settings with the probe's tools (`tool_daphnes.py`), for Daphne
processes started by the tests of turns with tools across processes."""

from __future__ import annotations

from chatsite.settings import *  # noqa: F403

TOOL_SOURCE_MODULES = ("tests.live.engine.processes.tool_daphnes",)
