"""The generation runner: one per process, it owns every running generation.

A generation is not owned by the socket that asked for it (docs/latency.md, rule 4):
closing or reloading the tab leaves the model writing into the database, and a
reconnecting socket resumes from the characters it already has. Only `stop` ends a
generation early.

The hot path is `Runner._relay`: each network read from the model server becomes at
most one frame per kind (thinking, content) and is written to every attached socket
before the next read. Nothing waits on a timer; deltas are merged only when several
arrive in one read, which happens exactly when we are behind. Persistence runs in
one checkpoint task per process that the relay never awaits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
import uuid
from collections.abc import Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol, cast

from channels.db import database_sync_to_async
from channels.layers import BaseChannelLayer
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    connections,
    router,
    transaction,
)
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from chat.live import admission, fanout, first_token, frames, layer, loop_state
from chat.live.events import (
    Catchup,
    CatchupRefused,
    ChannelEvent,
    GenerationResume,
    conversation_group,
    frame_event,
    generation_group,
)
from chat.live.loop_state import client_for
from chat.models import Message, ModelProfile
from chat.ops.metrics import observe_answer
from chat.rendering import markdown
from chat.upstream import Delta, Event, Finished, UpstreamError

logger = logging.getLogger(__name__)

# Coupled intervals. An answer's owner proves it alive with a checkpoint every
# CHECKPOINT_SECONDS; the orphan sweep (every SWEEP_SECONDS, on every process)
# calls it orphaned when that proof is older than ORPHAN_AFTER. While the
# database is away no proof can land, however alive the owner: so a sweep only
# judges once its own process has reached the database for ORPHAN_AFTER without
# a failed sweep (`Runner._trusted_since`), which gives the owner's heartbeat as
# long to land after an outage. An outage too short for any sweep to see (under
# SWEEP_SECONDS) delays a heartbeat by less than SWEEP_SECONDS +
# CHECKPOINT_SECONDS, which must stay below ORPHAN_AFTER.
CHECKPOINT_SECONDS = 1.0
ORPHAN_AFTER = timedelta(seconds=10)
SWEEP_SECONDS = 5.0
# How long a shutdown waits for the stopped answers' final saves.
SHUTDOWN_SECONDS = 10.0
END_SECONDS = 2.0  # for the process's own tasks to end once cancelled
SAVE_FAILED = (
    "The answer could not be saved; its text up to the last save (about a second "
    "before the end) is kept."
)
# A cancelled task ends at its next step: one still running after this is in a
# blocking Redis read that lost the cancel (see `Runner._wait_ended`).
CANCEL_GRACE_SECONDS = 0.1


class Sink(Protocol):
    """A socket that frames are written to (the consumer)."""

    async def send_frame(self, frame: frames.ServerFrame) -> None: ...


@dataclass(eq=False)
class Generation:
    conversation_id: int
    message: Message
    model: str
    think: bool | None
    attached: set[Sink] = field(default_factory=set)
    catching_up: set[Sink] = field(default_factory=set)  # in `Runner.resume`
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
    # (thinking_len, content_len) at the last checkpoint.
    checkpointed: tuple[int, int] = (0, 0)
    # The final frames, once stored: a socket resuming after that gets them.
    closing: list[frames.ServerFrame] | None = None
    # The request's options (the conversation's on top of the profile's).
    options: dict[str, Any] | None = None
    queue_position: int | None = None  # while waiting for a slot (chat.live.admission)
    # Set by the first-token watch (`chat.live.first_token`): our clock's load time,
    # and the fault it stopped the generation for.
    load_ms: float | None = None
    failure: UpstreamError | None = None
    # `_run` began: before that a cancel would skip it (no save, no frames), so
    # a stop then is only noted, and `_run` acts on it once it began.
    running: bool = False
    stop_asked: bool = False
    announced: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def message_id(self) -> int:
        return self.message.pk

    def content_text(self) -> str:
        return "".join(self.content)

    def thinking_text(self) -> str:
        return "".join(self.thinking)

    def apply(self, events: Iterable[Event]) -> list[frames.DeltaFrame]:
        """Record one network read's events; return its frames, deltas of the same
        kind merged, in arrival order."""
        out: list[frames.DeltaFrame] = []
        for event in events:
            if isinstance(event, Finished):
                self.finished = event
                continue
            self._record(event)
            last = out[-1] if out else None
            if last is not None and last["type"] == event.kind:
                last["delta"] += event.text
            else:
                out.append(frames.delta(event.kind, self.message_id, event.text))
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
        return values


class Runner:
    def __init__(self) -> None:
        self.id = uuid.uuid4().hex  # tells this process's events from others'
        self._subscribers: dict[int, set[Sink]] = {}
        self._generations: dict[int, Generation] = {}
        self._claimed: set[int] = set()
        # Since when (monotonic) this process's sweeps have reached the database
        # without a failure; None after a failure (see ORPHAN_AFTER).
        self._trusted_since: float | None = None

    # The layer, the runner's channel and its own tasks belong to the running
    # event loop: they live in its `chat.live.loop_state.LoopState`.

    @property
    def _layer(self) -> BaseChannelLayer | None:
        return loop_state.current().layer

    @property
    def _channel(self) -> str | None:
        state = loop_state.existing()
        return None if state is None else state.channel

    @property
    def _background(self) -> list[asyncio.Task[None]]:
        return loop_state.current().tasks

    @property
    def _checkpoints(self) -> asyncio.Task[None] | None:
        return loop_state.current().checkpoints

    @_checkpoints.setter
    def _checkpoints(self, task: asyncio.Task[None] | None) -> None:
        loop_state.current().checkpoints = task

    # The process's own tasks: requests from other processes (stop, resume) and
    # the sweep for answers whose process died.

    async def ensure_started(self) -> None:
        # A new loop (tests run several) has a new state: started there anew.
        state = loop_state.current()
        if state.started:
            return
        state.started = True
        loop = state.loop
        state.tasks.append(loop.create_task(self._sweep_loop(), name="sweep"))
        if fanout.spans_processes(state.layer):
            assert state.layer is not None
            state.channel = await state.layer.new_channel()
            state.tasks.append(loop.create_task(self._listen(), name="listen"))
            # Puts this process's group memberships back after Redis lost them.
            watch = layer.memberships.watch()
            state.tasks.append(loop.create_task(watch, name="memberships"))
        _stop_with_daphne(self)

    async def _listen(self) -> None:
        assert self._layer is not None and self._channel is not None
        task = asyncio.current_task()
        while True:
            try:
                event = await self._layer.receive(self._channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                if task is not None and task.cancelling():
                    # Shutting down (`_wait_ended` broke a lost cancel's read).
                    raise asyncio.CancelledError from None
                logger.warning("channel layer receive failed", exc_info=True)
                await asyncio.sleep(1)
                continue
            if event.get("type") == "generation.stop":
                self.stop(event["conversation_id"])
            elif event.get("type") == "generation.resume":
                await self._answer_resume(cast(GenerationResume, event))

    async def _sweep_loop(self) -> None:
        while True:
            try:
                await self.sweep_orphans()
            except Exception:
                self._trusted_since = None  # the owners could not checkpoint either
                logger.warning("orphan sweep failed", exc_info=True)
            await asyncio.sleep(SWEEP_SECONDS)

    async def _group_send(self, group: str, event: ChannelEvent) -> None:
        if fanout.spans_processes(self._layer):
            await layer.group_send(group, event)

    # Subscriptions: every open socket of a conversation hears its messages; a
    # socket hears a running generation's deltas once attached to it.

    def subscribe(self, conversation_id: int, sink: Sink) -> None:
        self._subscribers.setdefault(conversation_id, set()).add(sink)

    def unsubscribe(self, conversation_id: int, sink: Sink) -> None:
        sinks = self._subscribers.get(conversation_id)
        if sinks is not None:
            sinks.discard(sink)
            if not sinks:
                del self._subscribers[conversation_id]
        generation = self._generations.get(conversation_id)
        if generation is not None:
            generation.attached.discard(sink)

    async def broadcast(self, conversation_id: int, frame: frames.ServerFrame) -> None:
        """To every socket of the conversation, here and on other processes."""
        await _send_all(self._subscribers.get(conversation_id, ()), frame)
        await self._group_send(
            conversation_group(conversation_id), frame_event(self.id, frame)
        )

    async def tell(self, conversation_id: int, sent: list[frames.ServerFrame]) -> None:
        """Frames from an HTTP request, to every socket of the conversation. A
        process that has not served a socket yet has the channel layer too (its
        loop state's), so other processes' sockets are told too."""
        for frame in sent:
            await self.broadcast(conversation_id, frame)

    async def request_stop(self, conversation_id: int) -> None:
        """Stop the answer wherever it runs."""
        if not self.stop(conversation_id):
            await self._group_send(
                generation_group(conversation_id),
                {"type": "generation.stop", "conversation_id": conversation_id},
            )

    async def request_resume(
        self,
        conversation_id: int,
        message_id: int,
        offsets: tuple[int, int],
        reply_to: str,
    ) -> None:
        """Ask the process running the answer to send `reply_to` what it misses."""
        await self._group_send(
            generation_group(conversation_id),
            {
                "type": "generation.resume",
                "conversation_id": conversation_id,
                "message_id": message_id,
                "thinking_offset": offsets[0],
                "offset": offsets[1],
                "reply_to": reply_to,
            },
        )

    async def _answer_resume(self, event: GenerationResume) -> None:
        generation = self._generations.get(event["conversation_id"])
        if generation is None or generation.message_id != event["message_id"]:
            return
        assert self._layer is not None
        refusal = past_the_text(generation, event["thinking_offset"], event["offset"])
        if refusal is not None:
            reply: CatchupRefused = {
                "type": "chat.catchup",
                "message_id": generation.message_id,
                "refused": refusal,
            }
            await layer.send(event["reply_to"], reply)
            return
        catchup: Catchup = {
            "type": "chat.catchup",
            "origin": self.id,
            "start": frames.start(
                generation.message_id, generation.model, generation.think
            ),
            "message_id": generation.message_id,
            "thinking": (
                event["thinking_offset"],
                _tail(generation.thinking, event["thinking_offset"]),
            ),
            "content": (event["offset"], _tail(generation.content, event["offset"])),
        }
        if generation.queue_position is not None:
            catchup["queued"] = frames.queued(
                generation.message_id, generation.queue_position
            )
        await layer.send(event["reply_to"], catchup)

    # Generations.

    def claim(self, conversation_id: int) -> bool:
        """Reserve the conversation for one new generation (no await between the
        check and the reservation, so two tabs cannot both start one)."""
        if conversation_id in self._claimed:
            return False
        self._claimed.add(conversation_id)
        return True

    def release(self, conversation_id: int) -> None:
        self._claimed.discard(conversation_id)

    def generation(self, conversation_id: int) -> Generation | None:
        return self._generations.get(conversation_id)

    def is_busy(self, conversation_id: int) -> bool:
        return conversation_id in self._claimed

    async def start(
        self,
        profile: ModelProfile,
        message: Message,
        history: list[dict[str, str]],
        options: dict[str, Any] | None = None,
        told: Sequence[frames.ServerFrame] = (),
        plan: admission.Plan | None = None,
    ) -> Generation:
        """Start streaming `message` (a claimed conversation's placeholder answer),
        after broadcasting the frames `told` (the turn's question). `plan`: the
        admission decision taken with the turn (`admission.take_ticket`).

        The generation is registered and its task created with no await between:
        a claimed conversation always has a live task that ends by releasing it.
        Everything that can fail or wait (the channel layer, the sockets) happens
        inside the task. A failure before it exists releases the claim.
        """
        conversation_id = message.conversation_id
        try:
            await self.ensure_started()
        except BaseException:
            self.release(conversation_id)
            raise
        generation = Generation(
            conversation_id=conversation_id,
            message=message,
            model=profile.tag,
            think=message.thinking_enabled,
            attached=set(self._subscribers.get(conversation_id, ())),
            options=options,
        )
        self._generations[conversation_id] = generation
        generation.task = asyncio.create_task(
            self._run(generation, profile, history, told, plan),
            name=f"generation-{message.pk}",
        )
        generation.task.add_done_callback(lambda _: self._ended(generation))
        self._ensure_checkpoints()
        # The caller (a socket's handler) goes on once every viewer was told
        # (its next frame, a stop say, comes after the start, as before the
        # task existed); cancelling this wait leaves the task alone.
        await generation.announced.wait()
        return generation

    def _ended(self, generation: Generation) -> None:
        """The task ended. `_run` unregisters it first; a task that never ran
        (its loop closed first) must not keep the conversation claimed (the
        orphan sweep marks its answer: it gets no heartbeat)."""
        conversation_id = generation.conversation_id
        generation.announced.set()
        if self._generations.get(conversation_id) is generation:
            logger.warning("answer %s has no running task", generation.message_id)
            del self._generations[conversation_id]
            self.release(conversation_id)

    async def _announce(
        self, generation: Generation, told: Sequence[frames.ServerFrame]
    ) -> None:
        """The turn's frames and the start frame, to every viewer; and this
        process's channel into the generation group (for stops and resumes)."""
        conversation_id = generation.conversation_id
        for frame in told:
            await self.broadcast(conversation_id, frame)
        if self._channel is not None and self._layer is not None:
            generation.publisher = fanout.Publisher(
                self._layer, self.id, conversation_id, generation.message_id
            )
            await layer.join(generation_group(conversation_id), self._channel)
        start = frames.start(generation.message_id, generation.model, generation.think)
        await self.broadcast(conversation_id, start)

    def stop(self, conversation_id: int) -> bool:
        generation = self._generations.get(conversation_id)
        if generation is None or generation.task is None or generation.task.done():
            return False
        # On the loop's next turn: a task cancelled before its first step never
        # runs its clean-up (the conversation would stay claimed for good).
        generation.task.get_loop().call_soon(_cancel, generation)
        return True

    async def resume(
        self,
        sink: Sink,
        message_id: int,
        offset: int,
        thinking_offset: int,
        *,
        conversation_id: int,
    ) -> bool:
        """Send `sink` what it misses of a live generation, then attach it.
        False if no generation of that message runs here in that conversation
        (the sink's: message ids are easy to guess)."""
        generation = self._generations.get(conversation_id)
        if generation is None or generation.message_id != message_id:
            return False
        if sink in generation.attached or sink in generation.catching_up:
            # It is sent every delta already (or is being caught up): sending
            # the text after `offset` again would double it on screen.
            return True
        refusal = past_the_text(generation, thinking_offset, offset)
        if refusal is not None:
            await sink.send_frame(refusal)
            return True
        generation.catching_up.add(sink)
        try:
            await self._catch_up(generation, sink, offset, thinking_offset)
        finally:
            generation.catching_up.discard(sink)
        return True

    async def _catch_up(
        self, generation: Generation, sink: Sink, offset: int, thinking_offset: int
    ) -> None:
        message_id = generation.message_id
        start = frames.start(message_id, generation.model, generation.think)
        await sink.send_frame(start)
        if generation.queue_position is not None:
            await sink.send_frame(frames.queued(message_id, generation.queue_position))
        # Catch up until nothing new arrived during our own sends; attaching right
        # after that check (no await in between) leaves no gap and no overlap.
        while True:
            seen = (generation.thinking_len, generation.content_len)
            if thinking_offset < seen[0]:
                text = _tail(generation.thinking, thinking_offset)
                await sink.send_frame(frames.delta("thinking", message_id, text))
                thinking_offset = seen[0]
            if offset < seen[1]:
                text = _tail(generation.content, offset)
                await sink.send_frame(frames.delta("content", message_id, text))
                offset = seen[1]
            if (generation.thinking_len, generation.content_len) == seen:
                break
        if generation.closing is not None:
            # It ended during our sends: its final frames went out without us.
            for frame in generation.closing:
                await sink.send_frame(frame)
            return
        generation.attached.add(sink)

    async def shutdown(self) -> None:
        """Stop every generation, marked interrupted, and wait for their saves;
        then end the process's own tasks and close the loop's state (its
        preloads and model-server clients)."""
        loop = asyncio.get_running_loop()
        tasks = []
        for generation in self._generations.values():
            task = generation.task
            if task is not None and task.get_loop() is loop:
                generation.shutting_down = True
                if generation.running:
                    task.cancel()
                else:
                    generation.stop_asked = True
                tasks.append(task)
        if tasks:
            await asyncio.wait(tasks, timeout=SHUTDOWN_SECONDS)
        # The process's own loops. (Those of an event loop that ended, as tests
        # run several, went with its state.)
        state = loop_state.existing()
        if state is None:
            return
        own = [t for t in (*state.tasks, state.checkpoints) if t is not None]
        for task in own:
            task.cancel()
        await self._wait_ended(own)
        await loop_state.close()

    async def _wait_ended(self, cancelled: list[asyncio.Task[None]]) -> None:
        """Wait for the cancelled tasks. The listener's blocking Redis read can
        lose a cancellation (redis-py under a read timeout, then channels-redis'
        pop loop goes on): closing the layer's connections ends that read, and
        the listener then sees it is being cancelled. It is closed as soon as a
        task is seen not to end at once, not after END_SECONDS: every stop of
        a process (and every test) would wait those seconds for nothing."""
        if not cancelled:
            return
        _, pending = await asyncio.wait(cancelled, timeout=CANCEL_GRACE_SECONDS)
        close_pools = getattr(self._layer, "close_pools", None)
        if pending and close_pools is not None:
            logger.warning("a task ignored its cancel: closing the layer's connections")
            with contextlib.suppress(Exception):
                await close_pools()
            await asyncio.wait(pending, timeout=END_SECONDS)

    async def sweep_orphans(self) -> None:
        """Answers left streaming by a dead process: marked interrupted (their
        text kept), and their viewers told. Only once the database has been
        reachable long enough for live owners to have checkpointed (see
        ORPHAN_AFTER); this process's own answers are alive by definition."""
        now = time.monotonic()
        since = self._trusted_since
        if since is None or now - since <= ORPHAN_AFTER.total_seconds():
            await database_sync_to_async(_reach_database)()  # raises if away
            if self._trusted_since is None:
                self._trusted_since = now
            return
        own = [g.message_id for g in self._generations.values()]
        orphans = await database_sync_to_async(Message.objects.interrupt_orphans)(
            older_than=ORPHAN_AFTER, keep=own
        )
        for message in orphans:
            logger.warning("answer %s was orphaned: marked interrupted", message.pk)
            await self.broadcast(message.conversation_id, frames.message(message))

    # Persistence (docs/latency.md, rule 5): one task per process saves every
    # running answer about once a second, all in one trip to the database thread
    # (a task and a connection per answer cost 100 connections a second with 100
    # answers streaming, and their thread's hold on the GIL delayed the relay).

    def _ensure_checkpoints(self) -> None:
        task = self._checkpoints
        loop = asyncio.get_running_loop()
        # A task of a loop that closed (tests run several) will never run again.
        if task is None or task.done() or task.get_loop() is not loop:
            self._checkpoints = loop.create_task(
                self._checkpoint_loop(), name="checkpoints"
            )

    async def _checkpoint_loop(self) -> None:
        """Save the partial answers about once a second, until none is running.

        Each save is also a heartbeat that tells other processes the answer is
        alive (see `sweep_orphans`), so unchanged answers still get one.
        """
        while self._generations:
            await asyncio.sleep(CHECKPOINT_SECONDS)
            # Only a running task's answer gets a heartbeat: one without would
            # look alive to the orphan sweep for ever. A generation whose task
            # ended without unregistering it is let go.
            for g in list(self._generations.values()):
                if g.task is None or g.task.done():
                    self._ended(g)
            batch = [
                (g, (g.thinking_len, g.content_len)) for g in self._generations.values()
            ]
            if not batch:
                continue
            rows = [
                (g.message_id, None, None)
                if seen == g.checkpointed
                else (g.message_id, g.content_text(), g.thinking_text())
                for g, seen in batch
            ]
            try:
                failed = await _checkpoint(rows)
            except Exception:
                # The database may be briefly away: the next round retries.
                logger.warning(
                    "checkpoint of %d answers failed", len(rows), exc_info=True
                )
                continue
            for g, seen in batch:
                if g.message_id not in failed:
                    g.checkpointed = seen

    # The generation's task.

    async def _run(
        self,
        generation: Generation,
        profile: ModelProfile,
        history: list[dict[str, str]],
        told: Sequence[frames.ServerFrame] = (),
        plan: admission.Plan | None = None,
    ) -> None:
        status, error = Message.Status.DONE, None
        generation.running = True
        try:
            try:
                await self._announce(generation, told)
            finally:
                generation.announced.set()
            if generation.stop_asked:
                raise asyncio.CancelledError
            await admission.wait_for_slot(
                generation.message_id,
                profile.pk,
                lambda position: self._tell_queued(generation, position),
                first=plan,
            )
            generation.queue_position = None
            await self._relay(generation, profile, history)
        except asyncio.CancelledError:
            status = Message.Status.STOPPED
            if generation.shutting_down:
                status = Message.Status.INTERRUPTED
                error = UpstreamError(
                    "interrupted",
                    "The server shut down while this answer was being written.",
                )
            elif generation.failure is not None:
                status, error = Message.Status.ERROR, generation.failure
        except UpstreamError as exc:
            status, error = Message.Status.ERROR, exc
            logger.warning(
                "generation %s failed: %s", generation.message_id, exc.detail
            )
        except Exception as exc:
            logger.exception("generation %s crashed", generation.message_id)
            status = Message.Status.ERROR
            error = UpstreamError("internal_error", f"Internal error: {exc}")
        closing: list[frames.ServerFrame] = []
        generation.finishing = True
        try:
            closing = await self._finish(generation, status, error)
        except Exception:
            # Any failure (the conversation was deleted meanwhile, the database
            # refused the text): the task still ends as usual below, its slot and
            # claim released and its viewers told.
            logger.exception("answer %s could not be saved", generation.message_id)
            closing = await self._unsaved(generation)
        finally:
            # Stored and told: the conversation is free for its next answer.
            self._generations.pop(generation.conversation_id, None)
            self.release(generation.conversation_id)
            if self._channel is not None:
                # Not re-joined after a Redis restart any more (Redis' copy
                # stays: see the end of `_finish`).
                layer.forget(
                    generation_group(generation.conversation_id), self._channel
                )
        group = conversation_group(generation.conversation_id)
        for frame in closing:
            await self._group_send(group, frame_event(self.id, frame))
        await admission.release(
            generation.message_id, served=generation.upstream_at is not None
        )
        await _learn_token_ratio(profile, generation.message)

    async def _unsaved(self, generation: Generation) -> list[frames.ServerFrame]:
        """The final save failed: the answer is marked failed, keeping the text
        of its last checkpoint, if the database takes that much (a streaming row
        would hold its model slot until the orphan sweep); its viewers are told
        either way. Returns the frames for other processes' sockets."""
        message = generation.message
        message.status = Message.Status.ERROR
        message.error_code, message.error_detail = "save_failed", SAVE_FAILED
        try:
            await _mark_unsaved(message)
        except Exception:
            logger.warning("answer %s: marking it failed failed", message.pk)
        closing: list[frames.ServerFrame] = [
            frames.error(message.pk, message.error_code, SAVE_FAILED)
        ]
        closing.append(frames.done(message))
        generation.closing = closing
        subscribers = self._subscribers.get(generation.conversation_id, set())
        for frame in closing:
            await _send_all(generation.attached | subscribers, frame)
        return closing

    async def _tell_queued(self, generation: Generation, position: int) -> None:
        """The answer waits for a model slot: its viewers see its place in line."""
        generation.queue_position = position
        queued = frames.queued(generation.message_id, position)
        await self.broadcast(generation.conversation_id, queued)

    async def _relay(
        self,
        generation: Generation,
        profile: ModelProfile,
        history: list[dict[str, str]],
    ) -> None:
        client = client_for(profile)
        generation.upstream_at = time.perf_counter()
        watch = first_token.watch(generation, profile, self.broadcast)
        stream = client.chat(
            profile.tag,
            history,
            think=generation.think,
            options=generation.options or profile.request_options(generation.think),
            keep_alive=profile.keep_alive_value,
        )
        # aclosing: leaving the loop (done, stop, error) closes the upstream request,
        # which is how a model server learns to stop generating.
        publisher = generation.publisher
        if publisher is not None:
            pump = asyncio.create_task(publisher.run(), name="publish")
        try:
            async with aclosing(stream):
                async for events in stream:
                    for frame in generation.apply(events):
                        await _send_all(generation.attached, frame)
                        if publisher is not None:
                            publisher.add(frame["type"], frame["delta"])
                    if generation.finished is not None:
                        break
        finally:
            watch.cancel()
            if publisher is not None:
                pump.cancel()
        if generation.finished is None:
            raise UpstreamError(
                "stream_cut", "The model server ended the answer early."
            )

    async def _finish(
        self, generation: Generation, status: str, error: UpstreamError | None
    ) -> list[frames.ServerFrame]:
        """Save the answer and tell this process's sockets; return the frames
        that other processes' sockets are still to get."""
        message = generation.message
        message.content = generation.content_text()
        message.thinking = generation.thinking_text()
        message.status = status
        if error is not None:
            message.error_code, message.error_detail = error.code, error.detail
        for name, value in generation.figures().items():
            setattr(message, name, value)
        await _save_message(message)
        observe_answer(message)  # counters only: no I/O
        # A long answer's markdown is rendered in a helper process first; a short
        # one here, on the loop (in a worker thread it would hold the GIL in 5 ms
        # slices and stall the relay of every other answer even longer).
        await markdown.prerender(message.content)
        final = frames.message(message)
        subscribers = self._subscribers.get(generation.conversation_id, set())
        if generation.publisher is not None:
            await generation.publisher.flush()
        closing: list[frames.ServerFrame] = [frames.done(message), final]
        if error is not None:
            closing.insert(0, frames.error(message.pk, error.code, error.detail))
        # From here a resuming socket is sent these by `resume`, not attached.
        generation.closing = closing
        sinks = generation.attached | subscribers
        for frame in closing:
            await _send_all(sinks, frame)
        # The runner's channel stays in the generation group (a stop or resume
        # for an answer it no longer runs is ignored): leaving it here could race
        # with the next answer's join.
        return closing


def _cancel(generation: Generation) -> None:
    task = generation.task
    if task is None or task.done() or generation.finishing or task.cancelling():
        return  # ended, or already ending: a cancel would cut short its final save
    if generation.running:
        task.cancel()
    else:
        generation.stop_asked = True


def past_the_text(
    generation: Generation, thinking_offset: int, offset: int
) -> frames.ErrorFrame | None:
    """The error for a resume from beyond the text written so far (a client
    cannot have text the model has not written: resuming there would append the
    next text to the wrong place), or None."""
    if offset <= generation.content_len and thinking_offset <= generation.thinking_len:
        return None
    detail = (
        f"Cannot resume from offset {offset} (thinking {thinking_offset}): the "
        f"answer has {generation.content_len} characters so far (thinking "
        f"{generation.thinking_len}). Reload the page to see it whole."
    )
    return frames.error(generation.message_id, "bad_offset", detail)


def _tail(parts: list[str], offset: int) -> str:
    return "".join(parts)[offset:]


async def _send_all(sinks: Iterable[Sink], frame: frames.ServerFrame) -> None:
    for sink in list(sinks):
        try:
            await sink.send_frame(frame)
        except Exception:
            # A socket that fails to take a frame is going away; its disconnect
            # handler unsubscribes it. The other readers must not notice.
            logger.debug("dropped a frame for a closing socket", exc_info=True)


def _reach_database() -> None:
    """A round trip to the database (raises when it is away)."""
    connection = connections[router.db_for_read(Message)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


@database_sync_to_async
def _save_message(message: Message) -> None:
    message.save()


@database_sync_to_async
def _mark_unsaved(message: Message) -> None:
    Message.objects.filter(pk=message.pk, status=Message.Status.STREAMING).update(
        status=message.status,
        error_code=message.error_code,
        error_detail=message.error_detail,
    )


async def _learn_token_ratio(profile: ModelProfile, message: Message) -> None:
    """Calibrate the profile's token estimate from the answer's prompt figures
    (after the answer is saved and told: it delays nobody)."""
    try:
        await database_sync_to_async(profile.learn_from)(message)
    except DatabaseError:
        logger.warning("calibrating %s failed", profile.tag, exc_info=True)


Row = tuple[int, str | None, str | None]


@database_sync_to_async
def _checkpoint(rows: Sequence[Row]) -> set[int]:
    """One UPDATE per answer (message id, content, thinking; no text when it is
    unchanged), in one transaction. Answers no longer streaming (their final save
    came first) are left alone. Returns the ids whose text was not saved.

    Plain `executemany`, not a queryset per row: the ORM spends ~200 µs of Python
    per UPDATE, and while this thread holds the GIL for it (20-60 ms a second with
    100 answers streaming) the event loop waits for it after every socket call.

    One answer the database refuses must not cost the others their save (nor
    their heartbeat, which would let the orphan sweep interrupt them): the batch
    runs in a savepoint, and if it fails each row is tried again in its own, the
    refused one still getting its heartbeat. Raises only when no row could be
    written at all (the database is away: the caller retries next round).
    """
    using = router.db_for_write(Message)
    connection = connections[using]
    stamp = connection.ops.adapt_datetimefield_value(timezone.now())
    with transaction.atomic(using=using), connection.cursor() as cursor:
        try:
            with transaction.atomic(using=using):
                _write_checkpoint(cursor, rows, stamp)
            return set()
        except (OperationalError, InterfaceError):
            raise  # the database is away: no row would do better
        except (DatabaseError, ValueError):  # ValueError: UnicodeEncodeError
            logger.warning("checkpoint batch refused: saving row by row", exc_info=True)
        failed: set[int] = set()
        errors: list[Exception] = []
        written = 0
        for message_id, content, thinking in rows:
            attempts = [(message_id, content, thinking)]
            if content is not None:
                attempts.append((message_id, None, None))  # its heartbeat, at least
            for attempt in attempts:
                try:
                    with transaction.atomic(using=using):
                        _write_checkpoint(cursor, [attempt], stamp)
                except (DatabaseError, ValueError) as exc:
                    logger.warning("checkpoint of answer %s refused", message_id)
                    failed.add(message_id)
                    errors.append(exc)
                    continue
                written += 1
                break
        if not written:
            raise errors[-1]
        return failed


def _write_checkpoint(cursor: Any, rows: Sequence[Row], stamp: Any) -> None:
    connection: BaseDatabaseWrapper = cursor.db
    qn = connection.ops.quote_name
    columns = {f.name: f.column for f in Message._meta.concrete_fields if f.column}

    def column(name: str) -> str:
        return qn(columns[name])

    table = qn(Message._meta.db_table)
    where = f"WHERE {column('id')} = %s AND {column('status')} = %s"
    streaming = Message.Status.STREAMING.value
    texts = [
        (content, thinking, stamp, message_id, streaming)
        for message_id, content, thinking in rows
        if content is not None
    ]
    beats = [
        (stamp, message_id, streaming)
        for message_id, content, _ in rows
        if content is None
    ]
    if texts:
        cursor.executemany(
            f"UPDATE {table} SET {column('content')} = %s, "
            f"{column('thinking')} = %s, {column('updated_at')} = %s {where}",
            texts,
        )
    if beats:
        cursor.executemany(
            f"UPDATE {table} SET {column('updated_at')} = %s {where}", beats
        )


def _stop_with_daphne(runner: Runner) -> None:
    """Under Daphne, let Twisted wait for the generations' final saves before it
    stops the loop (Daphne has no ASGI lifespan events)."""
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is None or not getattr(reactor, "running", False):
        return
    from twisted.internet.defer import Deferred

    def before_shutdown() -> Deferred[None]:
        return Deferred.fromFuture(asyncio.ensure_future(runner.shutdown()))

    reactor.addSystemEventTrigger("before", "shutdown", before_shutdown)


runner = Runner()
