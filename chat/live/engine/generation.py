"""One answer being written, in memory: its text, its figures, who is reading it.

No I/O here (but the frames a socket catching up is sent, `resume`): the runner
(`chat.live.engine.runner`) feeds it the model server's events and writes its frames;
the checkpoint writer (`chat.live.engine.checkpoints`) saves its text; the first-token
watch (`chat.live.engine.first_token`) tells it through `loaded` and `fail`. Deltas are
merged only when several arrive in one network read (`apply`), which happens
exactly when we are behind.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.utils.translation import gettext as _

from chat.live.engine.processes import fanout
from chat.live.engine.turn.steps import Replay, Steps
from chat.live.protocol import frames
from chat.models import Message
from chat.upstream import Delta, Event, Finished, ToolCallDelta, UpstreamError

logger = logging.getLogger(__name__)


class Sink(Protocol):
    """A socket that frames are written to (the consumer)."""

    async def send_frame(self, frame: frames.ServerFrame) -> None: ...


async def send_all(sinks: Iterable[Sink], frame: frames.ServerFrame) -> None:
    """Write `frame` to each of `sinks`; one that fails does not stop the rest."""
    for sink in list(sinks):
        try:
            await sink.send_frame(frame)
        except Exception:
            # A socket that fails to take a frame is going away; its disconnect
            # handler unsubscribes it. The other readers must not notice.
            logger.debug("dropped a frame for a closing socket", exc_info=True)


@dataclass(eq=False)
class Generation:
    conversation_id: int
    message: Message
    model: str
    think: bool | None
    # The sockets sent every delta (`attach`, `detach`; read by `attached`).
    _attached: set[Sink] = field(default_factory=set, init=False, repr=False)
    catching_up: set[Sink] = field(default_factory=set)  # in `resume`
    content: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    content_len: int = 0  # in code points, the unit of resume offsets
    thinking_len: int = 0
    replaced_chars: int = 0  # unstorable characters of the server's text
    requested_at: float = field(default_factory=time.perf_counter)
    upstream_at: float | None = None
    first_token_at: float | None = None
    publisher: fanout.Publisher | None = None
    shutting_down: bool = False
    finishing: bool = False  # the answer is being saved: stop has nothing to do
    first_answer_at: float | None = None
    finished: Finished | None = None
    task: asyncio.Task[None] | None = None
    # (thinking_len, content_len) at the last checkpoint, and the steps'
    # version (`steps_version`).
    checkpointed: tuple[int, int] = (0, 0)
    checkpointed_steps: int = 0
    # The final frames, once stored: a socket resuming after that gets them.
    closing: list[frames.ServerFrame] | None = None
    # The request's options (the conversation's on top of the profile's).
    options: dict[str, Any] | None = None
    # While waiting for a slot (chat.live.engine.admission).
    queue_position: int | None = None
    # Told by the first-token watch (`loaded`, `fail`): our clock's load time,
    # and the fault it stopped the generation for.
    load_ms: float | None = None
    failure: UpstreamError | None = None
    # `_run` began: before that a cancel would skip it (no save, no frames), so
    # a stop then is only noted, and `_run` acts on it once it began.
    running: bool = False
    stop_asked: bool = False
    announced: asyncio.Event = field(default_factory=asyncio.Event)
    # Why its turn was not committed, when the model server was asked before
    # the commit (`Runner.start`, `stored`): the answer is then dropped unsaved.
    unstored: BaseException | None = None
    # A turn with tools: its steps (`chat.live.engine.turn.steps`); None for
    # an answer of one model call, whose paths stay as they were.
    steps: Steps | None = None

    @property
    def message_id(self) -> int:
        return self.message.pk

    @property
    def attached(self) -> AbstractSet[Sink]:
        """The sockets sent every delta as it arrives."""
        return self._attached

    def attach(self, *sinks: Sink) -> None:
        self._attached.update(sinks)

    def detach(self, sink: Sink) -> None:
        self._attached.discard(sink)

    def lengths(self) -> tuple[int, int]:
        """(thinking, content) written so far, in code points."""
        return (self.thinking_len, self.content_len)

    def steps_version(self) -> int:
        """Grows with each change of a turn's steps (0: an answer without)."""
        return 0 if self.steps is None else self.steps.version

    def step_parts(self) -> list[dict[str, Any]] | None:
        """A turn with tools' steps as stored (`Message.steps`); else None."""
        if self.steps is None:
            return None
        return self.steps.parts(self.tail, self.lengths())

    def content_text(self) -> str:
        return "".join(self.content)

    def thinking_text(self) -> str:
        return "".join(self.thinking)

    def tail(self, kind: frames.Kind, offset: int, end: int | None = None) -> str:
        """The text of `kind` ("thinking" or "content") after `offset` (up to
        `end`)."""
        parts = self.thinking if kind == "thinking" else self.content
        return "".join(parts)[offset:end]

    def awaits_first_token(self) -> bool:
        return self.first_token_at is None and self.finished is None

    def loaded(self, ms: float) -> None:
        """The model finished loading, `ms` after the request (our clock)."""
        self.load_ms = ms

    def fail(self, error: UpstreamError) -> None:
        """The fault the generation is stopped for (its task is cancelled next)."""
        self.failure = error

    def start_frame(self) -> frames.StartFrame:
        return frames.start(self.message_id, self.model, self.think)

    def queued_frame(self) -> frames.QueuedFrame | None:
        """Its place in line for a model slot, or None once it got one."""
        if self.queue_position is None:
            return None
        return frames.queued(self.message_id, self.queue_position)

    def past_the_text(
        self, thinking_offset: int, offset: int
    ) -> frames.ErrorFrame | None:
        """The error for a resume from beyond the text written so far (a client
        cannot have text the model has not written: resuming there would append
        the next text to the wrong place), or None."""
        if offset <= self.content_len and thinking_offset <= self.thinking_len:
            return None
        detail = _(
            "Cannot resume from offset %(offset)d (thinking %(thinking_offset)d): "
            "the answer has %(length)d characters so far (thinking "
            "%(thinking_length)d). Reload the page to see it whole."
        ) % {
            "offset": offset,
            "thinking_offset": thinking_offset,
            "length": self.content_len,
            "thinking_length": self.thinking_len,
        }
        return frames.error(self.message_id, "bad_offset", detail)

    def cancel(self) -> None:
        """Stop the task (`Runner.stop`, on the loop's turn after the request)."""
        task = self.task
        if task is None or task.done() or self.finishing or task.cancelling():
            return  # ended, or already ending: a cancel would cut short its final save
        self._end(task)

    def shut_down(self) -> asyncio.Task[None] | None:
        """The process is stopping: end the task, the answer marked interrupted.
        Returns the task to wait for, if it runs in this loop."""
        task = self.task
        if task is None or task.get_loop() is not asyncio.get_running_loop():
            return None
        self.shutting_down = True
        self._end(task)
        return task

    def _end(self, task: asyncio.Task[None]) -> None:
        # Before `_run` began a cancel would skip it (no save, no frames): the
        # stop is only noted then, and `_run` acts on it once it began.
        if self.running:
            task.cancel()
        else:
            self.stop_asked = True

    async def resume(self, sink: Sink, offset: int, thinking_offset: int) -> None:
        """Send `sink` what it misses after the offsets, then attach it."""
        if sink in self._attached or sink in self.catching_up:
            # It is sent every delta already (or is being caught up): sending
            # the text after `offset` again would double it on screen.
            return
        refusal = self.past_the_text(thinking_offset, offset)
        if refusal is not None:
            await sink.send_frame(refusal)
            return
        self.catching_up.add(sink)
        try:
            await self._catch_up(sink, offset, thinking_offset)
        finally:
            self.catching_up.discard(sink)

    async def _catch_up(self, sink: Sink, offset: int, thinking_offset: int) -> None:
        await sink.send_frame(self.start_frame())
        queued = self.queued_frame()
        if queued is not None:
            await sink.send_frame(queued)
        if self.steps is not None:
            await self._catch_up_steps(sink, offset, thinking_offset)
            return
        # Catch up until nothing new arrived during our own sends; attaching right
        # after that check (no await in between) leaves no gap and no overlap.
        # Each send stops at `seen`: content arriving while the thinking is sent
        # belongs to the next round, which sends it (sent now as well, it would
        # reach the socket twice).
        while True:
            seen = self.lengths()
            if thinking_offset < seen[0]:
                text = self.tail("thinking", thinking_offset, seen[0])
                await sink.send_frame(frames.delta("thinking", self.message_id, text))
                thinking_offset = seen[0]
            if offset < seen[1]:
                text = self.tail("content", offset, seen[1])
                await sink.send_frame(frames.delta("content", self.message_id, text))
                offset = seen[1]
            if self.lengths() == seen:
                break
        await self._caught_up(sink)

    async def _caught_up(self, sink: Sink) -> None:
        """Attach `sink` (no await since the last check for new text), or send
        it the final frames if the answer ended during the catch-up's sends."""
        if self.closing is not None:
            # It ended during our sends: its final frames went out without us.
            for frame in self.closing:
                await sink.send_frame(frame)
            return
        self._attached.add(sink)

    async def _catch_up_steps(
        self, sink: Sink, offset: int, thinking_offset: int
    ) -> None:
        """`_catch_up` for a turn with tools: the text and the steps, in the
        order they came (`chat.live.engine.turn.steps.Replay`), pass after
        pass until nothing new came during the sends; then attached."""
        assert self.steps is not None
        replay = Replay(self.steps, thinking_offset, offset)
        while True:
            seen = (self.lengths(), self.steps.version)
            for frame in replay.frames(self.message_id, self.tail, seen[0]):
                await sink.send_frame(frame)
            if (self.lengths(), self.steps.version) == seen:
                break
        await self._caught_up(sink)

    def apply(self, events: Iterable[Event]) -> list[frames.ServerFrame]:
        """Record one network read's events; return its frames, deltas of the same
        kind merged, in arrival order."""
        out: list[frames.ServerFrame] = []
        for event in events:
            if isinstance(event, Finished):
                self.finished = event
                continue
            if not isinstance(event, Delta):
                if isinstance(event, ToolCallDelta) and self.steps is not None:
                    if self.first_token_at is None:
                        self.first_token_at = time.perf_counter()
                    at = self.lengths()
                    out.extend(self.steps.on_delta(event, self.message_id, at))
                continue  # a tool call where none was offered: ignored
            self._record(event)
            frame = frames.delta(event.kind, self.message_id, event.text)
            if out and out[-1]["type"] == event.kind:
                # The last frame is a delta of this kind (a step frame
                # never has a delta's type).
                out[-1] = frames.merged(out[-1], frame)
            else:
                out.append(frame)
        return out

    def _record(self, event: Delta) -> None:
        now = time.perf_counter()
        if self.first_token_at is None:
            self.first_token_at = now
        self.replaced_chars += event.replaced
        if event.kind == "content":
            if self.first_answer_at is None:
                self.first_answer_at = now
            self.content.append(event.text)
            self.content_len += len(event.text)
        else:
            self.thinking.append(event.text)
            self.thinking_len += len(event.text)

    def figures(self) -> dict[str, Any]:
        """Our own clock's figures, and the server's when it reported them."""
        start = self.upstream_at or self.requested_at

        def since(moment: float | None) -> float | None:
            return None if moment is None else round((moment - start) * 1000, 3)

        thinking_ms = None
        if self.thinking_len and self.first_token_at is not None:
            end = self.first_answer_at or time.perf_counter()
            thinking_ms = round((end - self.first_token_at) * 1000, 3)
        values: dict[str, Any] = {
            "queue_wait_ms": round((start - self.requested_at) * 1000, 3),
            "first_token_ms": since(self.first_token_at),
            "first_answer_token_ms": since(self.first_answer_at),
            "thinking_ms": thinking_ms,
            "total_ms": since(time.perf_counter()),
            "replaced_chars": self.replaced_chars,
        }
        if self.finished is not None:
            values.update(
                done_reason=self.finished.done_reason,
                prompt_tokens=self.finished.prompt_tokens,
                prompt_eval_ms=self.finished.prompt_eval_ms,
                output_tokens=self.finished.output_tokens,
                eval_ms=self.finished.eval_ms,
                load_ms=self.finished.load_ms,
            )
        if values.get("load_ms") is None and self.load_ms is not None:
            values["load_ms"] = self.load_ms
        if self.steps is not None:
            values.update(self.steps.totals(self.finished))
        return values
