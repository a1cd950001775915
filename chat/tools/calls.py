"""What a turn's tools are, to the engine: the calls the model makes and what
they give back, whatever the tool's source (an MCP server, `chat.tools.mcp`;
the web, `chat.tools.web`).

The engine (`chat.live.engine.turn`) asks the tools a user may use in a
conversation for their `ToolSpec`s, offers them to the model, and runs each
`ToolCall` the model writes through the `ToolSource` that offered it. A run
never raises for what a tool or the model did wrong: a tool that is down,
hangs past its deadline, answers garbage or is called with arguments that
fail its JSON Schema gives an `Outcome` with `error` set, which goes back to
the model as the call's result (the turn goes on) and is shown to the user.
Only a cancellation (Stop, the requester gone) propagates."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as offered to the model.

    `name` is what the model calls it: unique among the tools of one turn and
    within the model servers' limits (`^[a-zA-Z0-9_-]{1,64}$`), e.g.
    `everything__echo` for the tool `echo` of the MCP server `everything`.
    `source` names the `ToolSource` that runs it (`mcp:<server pk>`, `web`);
    `tool` is the tool's own name there. `parameters` is its JSON Schema."""

    name: str
    source: str
    tool: str
    title: str
    description: str
    parameters: dict[str, Any]
    # The user confirms each call before it runs, in the answer.
    needs_approval: bool = False

    def offered(self) -> dict[str, Any]:
        """The tool in the model servers' `tools` list (both dialects take the
        function form)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model finished writing: its `arguments` as the JSON text it
    wrote (parsed and checked by the run, so a malformed call is an error the
    model is told of, not an exception)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Citation:
    """A source an answer may cite: a web page found or fetched."""

    url: str
    title: str
    snippet: str = ""


@dataclass(slots=True)
class Outcome:
    """What a tool run gave: `text` goes back to the model, `preview` (short)
    is shown to the user; both are data, never markup. `size` is the result's
    size in characters before any cut; `cut` says it was cut to the limit
    (`TOOL_RESULT_MAX_CHARS`), with a note in `text`. `error` is set when the
    run failed (then `text` says why, for the model)."""

    text: str
    preview: str = ""
    size: int = 0
    cut: bool = False
    error: str | None = None
    citations: list[Citation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


class ToolSource(Protocol):
    """Runs the tools it offered. `deadline` is in seconds from now."""

    async def run(self, spec: ToolSpec, call: ToolCall, *, deadline: float) -> Outcome:
        """The outcome of `call`; raises only `asyncio.CancelledError`."""
        ...
