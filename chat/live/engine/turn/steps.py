"""The steps of a turn with tools, in memory: the calls the model writes and
what their runs gave, where each began among the answer's text, and the rounds
(model calls) of the turn.

No I/O here. The answer's text stays in its `Generation` (one thinking and one
content stream for the whole turn, so resume offsets mean what they always
meant); the steps only mark where among that text each call and each round
began (`Mark`). From that, `parts` gives the stored form (`Message.steps`) and
`Replay` the frames a socket that resumes is sent: the text it misses and the
steps it may have missed, in the order they happened.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from chat.live.protocol import tool_frames
from chat.live.protocol.frames import DeltaFrame, Kind, ServerFrame, delta
from chat.models import ClientTools
from chat.tools.calls import Outcome, ToolCall
from chat.tools.toolbox import NO_TOOLS, Toolbox, Wanted
from chat.upstream import Finished, ToolCallDelta

State = Literal["writing", "awaiting_approval", "running", "done"]

# The source of an API client's own tools (`Steps.client`), and what its
# calls' stored steps say: the site gave them to the client, which runs them.
CLIENT_SOURCE = "client"
HANDED_OVER = gettext_noop("Sent to the API client, which runs it.")


@dataclass
class CallStep:
    """One call the model wrote, and its run."""

    id: str
    name: str
    title: str
    source: str
    round: int
    at: tuple[int, int]  # (thinking, content) lengths when it began
    arguments: list[str] = field(default_factory=list)
    state: State = "writing"
    started: int = 0  # epoch ms of the run (or of the wait for approval)
    outcome: Outcome | None = None
    ms: float = 0.0
    changed: int = 0  # the steps' version at its last change

    def call(self) -> ToolCall:
        return ToolCall(self.id, self.name, "".join(self.arguments))

    def result_frame(self, message_id: int) -> tool_frames.ToolResultFrame:
        assert self.outcome is not None
        outcome = self.outcome
        return tool_frames.tool_result(
            message_id,
            self.id,
            ok=outcome.ok,
            preview=outcome.preview,
            size=outcome.size,
            cut=outcome.cut,
            ms=self.ms,
            error=outcome.error,
            citations=[{"url": c.url, "title": c.title} for c in outcome.citations],
        )

    def part(self) -> dict[str, Any]:
        """Its stored form (`Message.steps`)."""
        outcome = self.outcome or Outcome(text="", error="not run")
        return {
            "kind": "tool",
            "id": self.id,
            "name": self.name,
            "title": self.title,
            "source": self.source,
            "arguments": "".join(self.arguments),
            "ok": outcome.ok,
            "preview": outcome.preview,
            "text": outcome.text,
            "size": outcome.size,
            "cut": outcome.cut,
            "ms": self.ms,
            "error": outcome.error,
            "citations": [
                {"url": c.url, "title": c.title, "snippet": c.snippet}
                for c in outcome.citations
            ],
        }


@dataclass(frozen=True)
class Mark:
    """Where a call or a round began among the answer's text."""

    at: tuple[int, int]
    call: CallStep | None = None  # else the round `round` began
    round: int = 0


Text = Callable[[Kind, int, int], str]  # `Generation.tail`


@dataclass
class Steps:
    """A turn's steps so far. `version` grows with every change a socket
    catching up must see (`Replay`)."""

    toolbox: Toolbox
    # What the conversation switched on, until the turn resolves it into
    # `toolbox` before its first model call (`chat.live.engine.turn.tools`).
    wanted: Wanted | None = None
    round: int = 1
    marks: list[Mark] = field(default_factory=list)
    calls: list[CallStep] = field(default_factory=list)
    # This round's calls by the model's index.
    writing: dict[int, CallStep] = field(default_factory=dict)
    # The earlier rounds' ends (their figures add up: `totals`).
    finishes: list[Finished] = field(default_factory=list)
    tool_ms: float = 0.0
    version: int = 0
    # The tools are offered to the next model call (not after the round limit).
    offering: bool = True
    # The round limit was reached: the last call was asked without tools.
    limited: bool = False
    owner_id: int | None = None  # whose tools run (the audit log's actor)
    # Calls run but not yet in the audit log (`tools._write_audits`).
    unaudited: list[dict[str, Any]] = field(default_factory=list)
    # Calls waiting for the user's approval (`decide`).
    approvals: dict[str, asyncio.Future[bool]] = field(default_factory=dict)
    # An API turn's: the client's own tools, offered as given and never run
    # here (`turn_rows.ClientTools`, `for_client`); None for the site's.
    client: ClientTools | None = None

    @classmethod
    def for_client(cls, tools: ClientTools, owner_id: int | None) -> Steps:
        """The steps of an API turn offering the client's `tools`: the model
        is called once, its calls streamed (the API's sink turns them into
        the dialect's shape) and kept, and the turn ends with that reply."""
        return cls(NO_TOOLS, owner_id=owner_id, client=tools)

    def offer(self) -> dict[str, Any]:
        """The tools (and `tool_choice`) of the next model call's request
        (`chat.upstream` `chat(...)`): none after the round limit."""
        if not self.offering:
            return {}
        if self.client is not None:
            return {"tools": self.client.tools, "tool_choice": self.client.choice}
        return {"tools": self.toolbox.offered()}

    @property
    def runs_tools(self) -> bool:
        """Whether the site runs the calls (an API client runs its own)."""
        return self.client is None

    def handed_over(self) -> None:
        """An API turn ended: its calls went to the client, which runs them
        (stored so, not as calls that never ran)."""
        for step in self.this_round():
            if step.outcome is None:
                step.outcome = Outcome(text="", preview=_(HANDED_OVER))
                step.state = "done"
        self.version += 1

    def on_delta(
        self, event: ToolCallDelta, message_id: int, at: tuple[int, int]
    ) -> list[ServerFrame]:
        """A piece of a call: its frames (`tool_call` for a new one, then
        `tool_args` for its arguments)."""
        out: list[ServerFrame] = []
        step = self.writing.get(event.index)
        if step is None:
            if self.client is not None and not self.client.parallel and self.writing:
                return out  # parallel_tool_calls false: the reply's first call
            call_id = event.id or f"call_{self.round}_{event.index}"
            found = self.toolbox.find(event.name)
            title = found[0].title if found else event.name
            source = found[0].source if found else ""
            if self.client is not None:
                source = CLIENT_SOURCE
            step = CallStep(call_id, event.name, title, source, self.round, at)
            self.writing[event.index] = step
            self.calls.append(step)
            self.marks.append(Mark(at, step))
            out.append(
                tool_frames.tool_call(message_id, call_id, step.name, title, source)
            )
        elif event.name and not step.name:
            step.name = event.name
        if event.arguments:
            step.arguments.append(event.arguments)
            out.append(tool_frames.tool_args(message_id, step.id, event.arguments))
        self.version += 1
        step.changed = self.version
        return out

    def next_round(
        self, finished: Finished, message_id: int, at: tuple[int, int]
    ) -> tool_frames.RoundFrame:
        """The model is called again: the round's end kept, the next begins."""
        self.finishes.append(finished)
        self.round += 1
        self.writing = {}
        self.marks.append(Mark(at, round=self.round))
        self.version += 1
        return tool_frames.round_frame(message_id, self.round)

    def round_began(self) -> tuple[int, int]:
        """Where this round's text began (thinking, content)."""
        for mark in reversed(self.marks):
            if mark.call is None:
                return mark.at
        return (0, 0)

    def approval(self, call_id: str) -> asyncio.Future[bool]:
        """What the user decides of the call (`decide`)."""
        future = asyncio.get_running_loop().create_future()
        self.approvals[call_id] = future
        return future

    def decide(self, call_id: str, allow: bool) -> bool:
        """The user's answer to a call awaiting approval; False when no call of
        that id awaits one."""
        future = self.approvals.pop(call_id, None)
        if future is None or future.done():
            return False
        future.set_result(allow)
        return True

    def this_round(self) -> list[CallStep]:
        return [step for step in self.calls if step.round == self.round]

    def running(self, step: CallStep, state: State) -> None:
        step.state = state
        step.started = int(time.time() * 1000)
        self.version += 1
        step.changed = self.version

    def ran(self, step: CallStep, outcome: Outcome, ms: float) -> None:
        step.outcome, step.ms, step.state = outcome, ms, "done"
        self.tool_ms += ms
        self.version += 1
        step.changed = self.version

    def totals(self, last: Finished | None) -> dict[str, Any]:
        """The figures of every model call of the turn: tokens and times
        added up (the prompt's of the last call, which holds the others')."""
        ends = [*self.finishes, *([last] if last is not None else [])]

        def total(name: str) -> float | None:
            values = [getattr(end, name) for end in ends]
            present = [v for v in values if v is not None]
            return sum(present) if present else None

        figures: dict[str, Any] = {
            "output_tokens": total("output_tokens"),
            "eval_ms": total("eval_ms"),
            "prompt_eval_ms": total("prompt_eval_ms"),
            "model_calls": self.round,
            "tool_ms": round(self.tool_ms, 3),
        }
        if figures["output_tokens"] is not None:
            figures["output_tokens"] = int(figures["output_tokens"])
        return figures

    def parts(self, text: Text, lengths: tuple[int, int]) -> list[dict[str, Any]]:
        """The stored steps: each round's thinking, then its content, then its
        calls, as the model wrote them."""
        out: list[dict[str, Any]] = []
        here = (0, 0)

        def text_to(at: tuple[int, int]) -> None:
            nonlocal here
            for i, kind in enumerate(("thinking", "content")):
                if at[i] > here[i]:
                    out.append({"kind": kind, "text": text(kind, here[i], at[i])})  # type: ignore[arg-type]
            here = (max(here[0], at[0]), max(here[1], at[1]))

        for mark in self.marks:
            text_to(mark.at)
            if mark.call is not None:
                out.append(mark.call.part())
        text_to(lengths)
        return out


@dataclass
class Sent:
    """What a socket catching up was sent of one call."""

    arguments: int = 0  # pieces
    state: State = "writing"


class Replay:
    """What one socket that resumes is sent, pass after pass until it has
    everything (`Generation._catch_up`): the text after its offsets, and every
    step it may not show (one that began at or after its offsets: a step
    that began exactly there may be shown already, and is shown anew by its
    `call_id`). Given `since`, the steps version the socket has, a call that
    began before its offsets but changed after that version is sent too,
    first (a socket on another process that missed its frames)."""

    def __init__(
        self, steps: Steps, thinking_offset: int, offset: int, since: int | None = None
    ) -> None:
        self.steps = steps
        self.here = (thinking_offset, offset)
        self.next = 0
        while self.next < len(steps.marks) and _before(
            steps.marks[self.next].at, self.here
        ):
            self.next += 1
        self.sent: dict[str, Sent] = {}
        self.again = [
            mark.call
            for mark in steps.marks[: self.next]
            if since is not None and mark.call is not None and mark.call.changed > since
        ]

    def frames(
        self, message_id: int, text: Text, lengths: tuple[int, int]
    ) -> list[ServerFrame]:
        out: list[ServerFrame] = []
        for step in self.again:  # shown already, changed since (`__init__`)
            out.append(self._call(step, message_id))
        self.again = []
        # Calls sent in an earlier pass first: their progress came before
        # any later step.
        for step in self.steps.calls:
            if step.id in self.sent:
                out.extend(self._progress(step, message_id))
        marks = self.steps.marks
        while self.next < len(marks):
            mark = marks[self.next]
            out.extend(self._text_to(mark.at, message_id, text))
            if mark.call is None:
                out.append(tool_frames.round_frame(message_id, mark.round))
            else:
                out.append(self._call(mark.call, message_id))
                out.extend(self._progress(mark.call, message_id))
            self.next += 1
        out.extend(self._text_to(lengths, message_id, text))
        return out

    def _call(self, step: CallStep, message_id: int) -> ServerFrame:
        """Its `tool_call` (from its first argument again: `_progress`)."""
        self.sent[step.id] = Sent()
        return tool_frames.tool_call(
            message_id, step.id, step.name, step.title, step.source
        )

    def _text_to(
        self, at: tuple[int, int], message_id: int, text: Text
    ) -> list[DeltaFrame]:
        out: list[DeltaFrame] = []
        kinds: tuple[Kind, Kind] = ("thinking", "content")
        for i, kind in enumerate(kinds):
            if at[i] > self.here[i]:
                out.append(delta(kind, message_id, text(kind, self.here[i], at[i])))
        self.here = (max(self.here[0], at[0]), max(self.here[1], at[1]))
        return out

    def _progress(self, step: CallStep, message_id: int) -> list[ServerFrame]:
        sent = self.sent[step.id]
        out: list[ServerFrame] = []
        if len(step.arguments) > sent.arguments:
            more = "".join(step.arguments[sent.arguments :])
            out.append(tool_frames.tool_args(message_id, step.id, more))
            sent.arguments = len(step.arguments)
        if step.state != sent.state:
            if step.state in ("awaiting_approval", "running"):
                state = step.state
                out.append(
                    tool_frames.tool_run(message_id, step.id, state, step.started)
                )
            elif step.state == "done":
                if sent.state == "writing":  # ran while we were away
                    out.append(
                        tool_frames.tool_run(
                            message_id, step.id, "running", step.started
                        )
                    )
                out.append(step.result_frame(message_id))
            sent.state = step.state
        return out


def _before(at: tuple[int, int], here: tuple[int, int]) -> bool:
    """Whether a step that began `at` is before a socket's offsets `here`:
    text written after it has reached the socket."""
    return here[0] > at[0] or here[1] > at[1]
