"""Answers seen from other processes, through the channel layer (Redis).

The owner's sockets are fed in-process (`chat.live.engine.runner`). Every other viewer
of a
conversation, on another Daphne process or host, gets the same answer through the
conversation's group, coalesced to one event per kind about every 50 ms
(docs/latency.md, rule 3). Delta events carry the code-point offset of their
text, so a viewer can drop overlap and notice gaps (`RemoteView`). The groups
and events are listed in `chat.live.protocol.channel_events`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from channels.layers import BaseChannelLayer, InMemoryChannelLayer

from chat.live.protocol.channel_events import (
    DeltaEvent,
    StepItem,
    StepsEvent,
    TextItem,
    conversation_group,
)
from chat.live.protocol.frames import DeltaFrame, Kind, ServerFrame, merged, tokens_in

logger = logging.getLogger(__name__)

COALESCE_SECONDS = 0.05
# How long a viewer's pacer, rested, waits for the next token to write behind
# (`Pacer.rested`).
BEHIND_SECONDS = COALESCE_SECONDS
# How long a publisher trusts what it read of its group's members (`Publisher`).
ELSEWHERE_SECONDS = 1.0
# The frames of a turn's steps, as against its other frames (`queued`, `error`).
STEP_TYPES = frozenset({"tool_call", "tool_args", "tool_run", "tool_result", "round"})
KINDS: tuple[Kind, Kind] = ("thinking", "content")


def spans_processes(layer: BaseChannelLayer | None) -> bool:
    """False for the in-memory layer: one process, nobody else to tell."""
    return layer is not None and not isinstance(layer, InMemoryChannelLayer)


class Paced:
    """Writes what was added since the last write (`flush`) as soon as something
    is, then rests COALESCE_SECONDS: one write per interval at most, and none
    waits for a timer when the last one was long ago (rule 3)."""

    def __init__(self) -> None:
        self.wake = asyncio.Event()

    async def run(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            await self.flush()
            await asyncio.sleep(COALESCE_SECONDS)
            await self.rested()

    async def flush(self) -> None:
        raise NotImplementedError

    async def rested(self) -> None:
        """Between a rest and the next write (which then waits for `wake`)."""


class Publisher(Paced):
    """Sends one generation's new text to its conversation group, merged per kind,
    at most one event per kind every COALESCE_SECONDS. The relay only calls
    `add`, which never waits.

    Only while another process listens: a group send is four trips to Redis, and
    this process's own sockets are fed in-process and drop what they hear from
    it. With 200 answers streaming and nobody elsewhere, those sends (and the
    pacing that leads to them) were 4,000 a second and most of the server's
    added latency (`python -m bench.processes`). So `run` reads the group's
    members every ELSEWHERE_SECONDS (a layer that cannot tell, or a failed read:
    publish); with none elsewhere `add` drops the text, keeping its offsets, and
    nothing wakes. A viewer that joins elsewhere meanwhile hears the next event
    within ELSEWHERE_SECONDS, sees the gap and catches up (`Feed.take`).

    A turn with tools' frames (`chat.live.protocol.tool_frames`) go out with
    the text around them in one `chat.steps` event, in the order they came:
    a step seals the text added before it (`_add_step`), so text written just
    after a step never reaches a viewer before it. `version` reads the turn's
    steps version (`Generation.steps_version`), which each step item carries
    (`chat.live.protocol.channel_events.StepItem`). An answer without tools
    never takes that path."""

    def __init__(
        self,
        layer: BaseChannelLayer,
        origin: str,
        conversation_id: int,
        message_id: int,
        version: Callable[[], int] = lambda: 0,
    ) -> None:
        super().__init__()
        self.layer, self.origin = layer, origin
        self.group = conversation_group(conversation_id)
        self.message_id = message_id
        self.pending: dict[Kind, list[str]] = {"thinking": [], "content": []}
        self.tokens: dict[Kind, int] = {"thinking": 0, "content": 0}
        self.published: dict[Kind, int] = {"thinking": 0, "content": 0}
        self.sending = asyncio.Lock()
        self.listened = True  # someone elsewhere, as last read (`run`)
        # A turn with tools' frames and the text before them, in order.
        self.version = version
        self.items: list[TextItem | StepItem] = []
        self.last_version = 0  # of the last step frame added, published or not

    def add(self, frame: ServerFrame) -> None:
        kind = frame["type"]
        if kind not in self.pending:
            self._add_step(frame)
            return
        text: DeltaFrame = frame  # type: ignore[assignment]  # a delta's kind
        if not self.listened:
            self.published[kind] += len(text["delta"])
            return
        self.pending[kind].append(text["delta"])
        self.tokens[kind] += tokens_in(text)
        self.wake.set()

    def _add_step(self, frame: ServerFrame) -> None:
        version: int | None = None
        since = self.last_version
        if frame["type"] in STEP_TYPES:
            version = self.last_version = self.version()
        if not self.listened:
            return
        self.items.extend(self._text_items())
        at = (self.published["thinking"], self.published["content"])
        self.items.append(StepItem(frame=frame, version=version, since=since, at=at))
        self.wake.set()

    def _text_items(self) -> list[TextItem]:
        """The text added since the last send, taken (its offsets counted)."""
        items: list[TextItem] = []
        for kind in KINDS:
            parts = self.pending[kind]
            if parts:
                text = "".join(parts)
                parts.clear()
                start = self.published[kind]
                self.published[kind] += len(text)
                tokens, self.tokens[kind] = self.tokens[kind], 0
                items.append(TextItem(kind=kind, start=start, text=text, tokens=tokens))
        return items

    async def run(self) -> None:
        watch = asyncio.create_task(self._watch(), name="publisher watch")
        try:
            await super().run()
        finally:
            watch.cancel()

    async def _watch(self) -> None:
        """Whether a socket of another process is in the group, read now and
        every ELSEWHERE_SECONDS (see the class)."""
        elsewhere = getattr(self.layer, "elsewhere", None)
        if elsewhere is None:
            return  # a layer that cannot tell: always publish
        while True:
            try:
                self.listened = await elsewhere(self.group)
            except Exception:
                logger.warning("reading %s failed", self.group, exc_info=True)
                self.listened = True
            await asyncio.sleep(ELSEWHERE_SECONDS)

    async def flush(self) -> None:
        # The relay cancels the pump (`run`) when the answer ends, maybe halfway
        # through a send: cut short, that text would be lost to every other
        # process's viewer, and the final flush would leave them a gap. So a send
        # runs to its end whatever happens to the pump, and the next flush waits
        # for it (in order: the lock).
        await asyncio.shield(self._send_pending())

    async def _send_pending(self) -> None:
        async with self.sending:
            if self.items:
                await self._send_items()
                return
            for kind in ("thinking", "content"):
                parts = self.pending[kind]
                if not parts:
                    continue
                text = "".join(parts)
                parts.clear()
                tokens, self.tokens[kind] = self.tokens[kind], 0
                start = self.published[kind]
                self.published[kind] = start + len(text)
                event = DeltaEvent(
                    type="chat.delta",
                    origin=self.origin,
                    message_id=self.message_id,
                    kind=kind,
                    start=start,
                    text=text,
                    tokens=tokens,
                )
                try:
                    await self.layer.group_send(self.group, event)  # type: ignore[arg-type]
                except Exception:
                    # Remote viewers notice the gap and resume; the owner goes on.
                    logger.warning("publishing to %s failed", self.group, exc_info=True)

    async def _send_items(self) -> None:
        """The steps and the text around them, all added so far, in one send."""
        items = [*self.items, *self._text_items()]
        self.items = []
        event = StepsEvent(
            type="chat.steps",
            origin=self.origin,
            message_id=self.message_id,
            items=items,
        )
        try:
            await self.layer.group_send(self.group, event)  # type: ignore[arg-type]
        except Exception:
            # Remote viewers notice the gap (`StepItem`) and resume.
            logger.warning("publishing to %s failed", self.group, exc_info=True)


# A delta from another process: kind, start (code point), text, tokens.
RemoteDelta = tuple[Kind, int, str, int]
# What a viewer holds while it catches up: deltas, and a turn's step items.
Held = RemoteDelta | StepItem


class RemoteView:
    """What one socket has of an answer streamed by another process."""

    def __init__(self, thinking: int = 0, content: int = 0) -> None:
        self.have: dict[Kind, int] = {"thinking": thinking, "content": content}
        self.resuming = False  # a catch-up was asked for; deltas wait for it
        # The deltas that came meanwhile (kind, start, text): none is dropped,
        # since the catch-up may never come (`Feed.ask_catchup`).
        self.held: list[Held] = []
        self.caught = asyncio.Event()  # the catch-up came
        # A turn with tools: the steps version of the last step frame shown,
        # and the one the last catch-up covered (`step`).
        self.steps_version = 0
        self.caught_version = 0

    def take(self, kind: Kind, start: int, text: str) -> str | None:
        """The part of `text` (at code point `start`) that is new to this socket;
        "" when all of it was seen; None when text before it is missing."""
        have = self.have[kind]
        if start > have:
            return None
        end = start + len(text)
        if end <= have:
            return ""
        self.have[kind] = end
        return text[have - start :]

    def step(self, item: StepItem) -> bool | None:
        """Whether to show a step frame: False when a catch-up covered it
        already, None when something before it is missing."""
        version = item["version"]
        if version is None:  # not a change of the steps: shown as it comes
            return True
        if version <= self.caught_version:
            return False
        thinking, content = item["at"]
        have = self.have
        if (
            item["since"] > self.steps_version
            or thinking > have["thinking"]
            or content > have["content"]
        ):
            return None
        self.steps_version = max(self.steps_version, version)
        return True

    def caught_up(self, version: int) -> None:
        """A catch-up covered the steps up to `version`."""
        self.caught_version = version
        self.steps_version = max(self.steps_version, version)


SendFrame = Callable[[ServerFrame], Awaitable[None]]


class Pacer(Paced):
    """A viewer's frames, with its text deltas merged to at most one frame every
    COALESCE_SECONDS (rule 3: viewers other than the owner may be coalesced).

    `delta` never waits, so a relay feeding many viewers pays almost nothing per
    token and viewer; the writes happen in the pacer's own task. Any other frame
    goes out at once, after the text before it (order is kept).

    A rested pacer with text pending writes it behind the next token (`rested`),
    not when its rest ends: every viewer of an answer rests from the same token,
    so their rests end together, and their writes (a hundred viewers: a few
    milliseconds of the loop) landed on the owner's next token whenever it came
    just then (at 80 tok/s, 50 ms is exactly four tokens): the owner's added
    p99 with 100 viewers (`python -m bench`). Written behind a token, they run
    once the relay has written that token to the owner and waits for the next.
    A model that pauses gets its text to the viewers `BEHIND_SECONDS` later.
    """

    def __init__(self, send: SendFrame) -> None:
        super().__init__()
        self.send = send
        self.pending: list[DeltaFrame] = []
        self.lock = asyncio.Lock()
        self.task: asyncio.Task[None] | None = None

    async def rested(self) -> None:
        """With text pending, wait for the next token (`delta` sets `wake`) to
        write behind it, at most BEHIND_SECONDS."""
        if not self.pending:
            return
        self.wake.clear()  # set by the text already pending: wait for new text
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(BEHIND_SECONDS):
                await self.wake.wait()
        self.wake.set()  # the pending text goes now, token or not

    def delta(self, frame: DeltaFrame) -> None:
        last = self.pending[-1] if self.pending else None
        if (
            last is not None
            and last["type"] == frame["type"]
            and last["message_id"] == frame["message_id"]
        ):
            self.pending[-1] = merged(last, frame)
        else:
            self.pending.append(frame)
        if self.task is None:
            self.task = asyncio.create_task(self.run(), name="pacer")
        self.wake.set()

    async def frame(self, frame: ServerFrame) -> None:
        async with self.lock:
            await self._write_pending()
            await self.send(frame)

    async def flush(self) -> None:
        try:
            async with self.lock:
                await self._write_pending()
        except Exception:
            # The socket is going away; its disconnect closes the pacer.
            logger.debug("dropped frames for a closing socket", exc_info=True)

    async def _write_pending(self) -> None:
        pending, self.pending = self.pending, []
        for frame in pending:
            await self.send(frame)

    def close(self) -> None:
        self.pending = []
        if self.task is not None:
            self.task.cancel()
