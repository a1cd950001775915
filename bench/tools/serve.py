"""`python -m bench.tools.serve [DAPHNE OPTIONS]`: the site as `chatsite.serve`
starts it, with two sources of tools registered for the tools bench:

- `stamp` (in this process): its tool `stamp` answers at once, nothing between
  the engine and the result;
- `mcp:1`: our MCP server (tests/tools/mcp/tool_server.py) over stdio, its
  tools as `bench__<tool>`, listed once here at the start (a provider must not
  wait on the network), run as the site runs any MCP server's.

Each result's text for the model ends with `READY` and the wall-clock time the
result came back to the engine: the simulator's log holds the request that
carried it, and when that request arrived.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

READY = " ready at "
STAMP_SOURCE = "stamp"
MCP_SOURCE = "mcp:1"
MCP_SLUG = "bench"
TEXT = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}


def stamped(text: str) -> str:
    return f"{text}{READY}{time.time():.6f}"


def ready_at(text: str) -> float | None:
    """The stamp at the end of a result's text, or None."""
    _, found, stamp = text.rpartition(READY)
    try:
        return float(stamp) if found else None
    except ValueError:
        return None


def register() -> None:
    """Both sources, with the toolbox (after Django's set-up)."""
    from chat.tools import toolbox
    from chat.tools.calls import Outcome, ToolCall, ToolSpec
    from chat.tools.mcp import Reachable, offer
    from chat.tools.mcp.config import ServerConfig

    class Stamp:
        async def run(
            self, spec: ToolSpec, call: ToolCall, *, deadline: float
        ) -> Outcome:
            return Outcome(text=stamped(call.arguments), preview="stamped")

    spec = ToolSpec("stamp", STAMP_SOURCE, "stamp", "Stamp", "Says its text", TEXT)
    stamp = toolbox.Offer(STAMP_SOURCE, "Stamp", Stamp(), [spec])

    server = ServerConfig(
        pk=1,
        slug=MCP_SLUG,
        name="bench",
        transport="stdio",
        command=sys.executable,
        args=("-m", "tests.tools.mcp.tool_server", "stdio"),
        timeout=20,
    )
    listed = asyncio.run(offer([Reachable(server, {})]))
    if listed.unavailable:
        raise SystemExit(f"the MCP server lists no tools: {listed.unavailable}")

    class Mcp:
        async def run(
            self, spec: ToolSpec, call: ToolCall, *, deadline: float
        ) -> Outcome:
            outcome = await listed.run(spec, call, deadline=deadline)
            outcome.text = stamped(outcome.text)
            return outcome

    mcp = toolbox.Offer(MCP_SOURCE, "bench", Mcp(), listed.specs)

    def offers(user: Any, conversation: Any) -> list[toolbox.Offer]:
        return [stamp, mcp]

    toolbox.register("bench", offers)


def main() -> None:
    from chatsite import serve

    serve.use_uvloop()  # first, as chatsite.serve does
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatsite.settings")
    import django

    django.setup()
    register()
    serve.main()


if __name__ == "__main__":
    main()
