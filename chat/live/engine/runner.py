"""The generation runner: one per process, it owns every running generation.

A generation is not owned by the socket that asked for it (docs/latency.md, rule 4):
closing or reloading the tab leaves the model writing into the database, and a
reconnecting socket resumes from the characters it already has. Only `stop` ends a
generation early.

Each generation is one task (`Runner._run`): announced, queued for a model slot
(`chat.live.engine.admission`), relayed from the model server to its sockets (the hot
path, `chat.live.engine.relay`), then saved and told (`chat.live.engine.finish`). The
answer
itself lives in memory (`chat.live.engine.generation`). Persistence runs in one
checkpoint task per process that the relay never awaits (`chat.live.engine.checkpoints`,
with the orphan sweep). Sockets call the runner; pages, and requests that may
concern another process's answer, go through `chat.live.engine.control`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import BaseChannelLayer

from chat.live.engine import admission, checkpoints, finish, loop_state
from chat.live.engine.checkpoints import SWEEP_SECONDS
from chat.live.engine.generation import Generation, Sink, send_all
from chat.live.engine.processes import fanout, layer, liveness, remote
from chat.live.engine.processes.daphne_shutdown import (
    stop_with_daphne as _stop_with_daphne,
)
from chat.live.engine.turn import asking, early
from chat.live.engine.turn.steps import Steps
from chat.live.engine.turn.tools import converse
from chat.live.protocol import frames
from chat.live.protocol.channel_events import (
    ChannelEvent,
    GenerationApprove,
    GenerationResume,
    conversation_group,
    frame_event,
    generation_group,
)
from chat.models import Message, ModelProfile, compiled_queries

logger = logging.getLogger(__name__)

# How long a shutdown waits for the stopped answers' final saves.
SHUTDOWN_SECONDS = 10.0


class Runner:
    def __init__(self) -> None:
        self.id = uuid.uuid4().hex  # tells this process's events from others'
        self._subscribers: dict[int, set[Sink]] = {}
        self._generations: dict[int, Generation] = {}
        self._claimed: set[int] = set()
        # Since when (monotonic) this process's sweeps have reached the database
        # without a failure; None after a failure (see ORPHAN_AFTER).
        self._trusted_since: float | None = None
        # With Redis: since when other processes' answers have been silent there.
        self._silences = liveness.Silences()

    # The layer, the runner's channel and its own tasks belong to the running
    # event loop: they live in its `chat.live.engine.loop_state.LoopState`.

    @property
    def _layer(self) -> BaseChannelLayer | None:
        return loop_state.current().layer

    @property
    def spans_processes(self) -> bool:
        """Whether its answers are heard on other processes (its channel)."""
        return self._channel is not None

    @property
    def _channel(self) -> str | None:
        state = loop_state.existing()
        return None if state is None else state.channel

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
        state.tasks.append(loop.create_task(_compile_queries(), name="compile"))
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
        answers = (self.stop, self._answer_resume, self._answer_approve)
        await remote.listen(self._layer, self._channel, *answers)

    async def _sweep_loop(self) -> None:
        while True:
            try:
                await self.sweep_orphans()
            except Exception:
                self._trusted_since = None  # the owners could not checkpoint either
                logger.warning("orphan sweep failed", exc_info=True)
            await asyncio.sleep(SWEEP_SECONDS)

    async def _group_send(self, group: str, event: ChannelEvent) -> None:
        await remote.group_send(self._layer, group, event)

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
            generation.detach(sink)

    async def broadcast(self, conversation_id: int, *sent: frames.ServerFrame) -> None:
        """To every socket of the conversation, here and on other processes."""
        await self._send_here(conversation_id, sent)
        await self._send_elsewhere(conversation_id, sent)

    async def _send_here(
        self, conversation_id: int, sent: Sequence[frames.ServerFrame]
    ) -> None:
        """To this process's sockets of the conversation, in order."""
        for frame in sent:
            await send_all(self._subscribers.get(conversation_id, ()), frame)

    async def _send_elsewhere(
        self, conversation_id: int, sent: Sequence[frames.ServerFrame]
    ) -> None:
        """To other processes' sockets of the conversation, in one send to the
        channel layer (each send is a few trips to Redis); none for no frames."""
        if sent:
            event = frame_event(self.id, *sent)
            await self._group_send(conversation_group(conversation_id), event)

    # Requests from other processes (`chat.live.engine.processes.remote`; pages and
    # sockets ask
    # through `chat.live.engine.control`).

    async def _answer_resume(self, event: GenerationResume) -> None:
        generation = self._generations.get(event["conversation_id"])
        await remote.answer_resume(generation, event, self.id)

    def _answer_approve(self, event: GenerationApprove) -> None:
        remote.answer_approve(self.generation(event["conversation_id"]), event)

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
        history: list[dict[str, Any]],
        options: dict[str, Any] | None = None,
        told: Sequence[frames.ServerFrame] = (),
        plan: admission.Plan | None = None,
        stored: early.Storing | None = None,
        steps: Steps | None = None,
    ) -> Generation:
        """Start streaming `message` (a claimed conversation's placeholder answer),
        after broadcasting the frames `told` (the turn's question). `plan`: the
        admission decision taken with the turn (`admission.take_ticket`).

        `stored`: the turn is still being committed (`chat.live.engine.turn.beginning`)
        and
        its answer holds a slot: the model server is asked at once, and the turn
        is announced with the frames `stored` gives, once committed or once
        shown before (docs/latency.md, rule 8). If the commit fails instead, the
        upstream request is closed, nothing is saved (`Generation.unstored`),
        and what was told is taken back; the caller tells its socket.

        `steps`: a turn with tools (`chat.tools.toolbox.tools_for`), a loop of
        model calls and tool runs (`chat.live.engine.turn.tools`).

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
            options=options,
        )
        generation.steps = steps
        generation.attach(*self._subscribers.get(conversation_id, ()))
        self._generations[conversation_id] = generation
        generation.task = asyncio.create_task(
            self._run(generation, profile, history, told, plan, stored),
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

    async def announce(
        self, generation: Generation, told: Sequence[frames.ServerFrame]
    ) -> None:
        """The turn's frames and the start frame, to every viewer; and this
        process's channel into the generation group (for stops and resumes)."""
        conversation_id = generation.conversation_id
        announced = [*told, generation.start_frame()]
        await self._send_here(conversation_id, announced)
        if self._channel is not None and self._layer is not None:
            self.publish(generation)
            await layer.join(generation_group(conversation_id), self._channel)
        # Other processes' sockets, once a stop or a resume from them reaches
        # this process (the answer's first token waits for this announcement).
        await self._send_elsewhere(conversation_id, announced)

    def publish(self, generation: Generation) -> None:
        """Its deltas go to other processes' sockets too (`fanout.Publisher`)."""
        if generation.publisher is None and self._layer is not None:
            generation.publisher = fanout.Publisher(
                self._layer, self.id, generation.conversation_id, generation.message_id
            )
            generation.publisher.version = generation.steps_version

    def stop(self, conversation_id: int) -> bool:
        generation = self._generations.get(conversation_id)
        if generation is None or generation.task is None or generation.task.done():
            return False
        # On the loop's next turn: a task cancelled before its first step never
        # runs its clean-up (the conversation would stay claimed for good).
        generation.task.get_loop().call_soon(generation.cancel)
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
        await generation.resume(sink, offset, thinking_offset)
        return True

    async def shutdown(self) -> None:
        """Stop every generation, marked interrupted, and wait for their saves;
        then end the process's own tasks and close the loop's state (its
        preloads and model-server clients)."""
        ending = [g.shut_down() for g in list(self._generations.values())]
        tasks = [task for task in ending if task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=SHUTDOWN_SECONDS)
        # The process's own tasks end with the loop's state. (Those of an event
        # loop that ended, as tests run several, went with its state.)
        await loop_state.close()

    async def sweep_orphans(self) -> None:
        """Answers left streaming by a dead process: marked interrupted, and
        their viewers told (see `chat.live.engine.checkpoints.sweep`)."""
        own = [g.message_id for g in self._generations.values() if g.message.pk]
        if fanout.spans_processes(self._layer):
            assert self._layer is not None
            orphans = await checkpoints.sweep_silent(self._silences, own, self._layer)
        else:
            self._trusted_since, orphans = await checkpoints.sweep(
                self._trusted_since, own
            )
        for message in orphans:
            await self.broadcast(message.conversation_id, frames.message(message))

    # Persistence: one task per process saves every running answer about once
    # a second (`chat.live.engine.checkpoints`).

    def _ensure_checkpoints(self) -> None:
        state = loop_state.current()  # a new loop (tests run several): a new task
        if state.checkpoints is None or state.checkpoints.done():
            state.checkpoints = state.loop.create_task(
                self._checkpoint_loop(), name="checkpoints"
            )

    async def _checkpoint_loop(self) -> None:
        await checkpoints.run(self._generations, self._ended, self._layer, self.id)

    # The generation's task.

    async def _run(
        self,
        generation: Generation,
        profile: ModelProfile,
        history: list[dict[str, Any]],
        told: Sequence[frames.ServerFrame] = (),
        plan: admission.Plan | None = None,
        stored: early.Storing | None = None,
    ) -> None:
        ended: BaseException | None = None  # what the relay raised, if anything
        generation.running = True
        try:
            if stored is not None:
                await asking.ask_while_storing(
                    self, generation, profile, history, stored
                )
            else:
                try:
                    await self.announce(generation, told)
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
                await converse(generation, profile, history, self.broadcast)
        except (asyncio.CancelledError, Exception) as exc:
            ended = exc
        if generation.unstored is not None:
            # Nothing of the turn was committed: nothing to save or to tell.
            self._generations.pop(generation.conversation_id, None)
            self.release(generation.conversation_id)
            await admission.release(generation.message_id, served=False)
            return
        status, error = finish.outcome(generation, ended)
        closing: list[frames.ServerFrame] = []
        generation.finishing = True

        def viewers() -> set[Sink]:  # this process's sockets of the conversation
            return self._subscribers.get(generation.conversation_id, set())

        # Saved, then told to this process's sockets; `closing` is what other
        # processes' sockets are still to get.
        try:
            closing = await finish.save(generation, status, error, viewers)
        except Exception:
            # Any failure (the conversation was deleted meanwhile, the database
            # refused the text): the task still ends as usual below, its slot and
            # claim released and its viewers told.
            logger.exception("answer %s could not be saved", generation.message_id)
            closing = await finish.unsaved(generation, viewers)
        finally:
            # Stored and told: the conversation is free for its next answer.
            self._generations.pop(generation.conversation_id, None)
            self.release(generation.conversation_id)
            if self._channel is not None:
                # Not re-joined after a Redis restart any more. Redis' copy
                # stays: the runner's channel stays in the generation group (a
                # stop or resume for an answer it no longer runs is ignored), as
                # leaving it here could race with the next answer's join.
                layer.forget(
                    generation_group(generation.conversation_id), self._channel
                )
        # The closing frames in one send, and the slot's release at the same time
        # (each send is a few trips to Redis): one after the other, the three
        # kept this loop busy for about 4 ms after the `done` (bench.request_path,
        # PostgreSQL + Redis), while a question asked right after it was handled.
        await asyncio.gather(
            self._send_elsewhere(generation.conversation_id, closing),
            admission.release(
                generation.message_id, served=generation.upstream_at is not None
            ),
        )
        await finish.learn_token_ratio(profile, generation.message)

    async def _tell_queued(self, generation: Generation, position: int) -> None:
        """The answer waits for a model slot: its viewers see its place in line."""
        generation.queue_position = position
        queued = frames.queued(generation.message_id, position)
        await self.broadcast(generation.conversation_id, queued)


async def _compile_queries() -> None:
    """The question's reads compiled in the database thread before the first
    question needs them (`chat.models.compiled_queries.compile_all`)."""
    try:
        await database_sync_to_async(compiled_queries.compile_all)()
    except Exception:  # the first question compiles them then
        logger.warning("the prepared queries could not be compiled", exc_info=True)


runner = Runner()
