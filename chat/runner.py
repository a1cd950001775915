"""The generation runner: one per process, it owns every running generation.

A generation is not owned by the socket that asked for it (DESIGN, latency rule 4):
closing or reloading the tab leaves the model writing into the database, and a
reconnecting socket resumes from the characters it already has. Only `stop` ends a
generation early.

The hot path is `Runner._relay`: each network read from the model server becomes at
most one frame per kind (thinking, content) and is written to every attached socket
before the next read. Nothing waits on a timer; deltas are merged only when several
arrive in one read, which happens exactly when we are behind. Persistence runs in a
separate checkpoint task that the relay never awaits.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from channels.db import database_sync_to_async
from django.utils import timezone

from chat import frames
from chat.models import Message, ModelProfile
from chat.upstream import Delta, Event, Finished, UpstreamError, ollama_client

logger = logging.getLogger(__name__)

CHECKPOINT_SECONDS = 1.0
# A streaming answer whose checkpoint is older than this has no live owner.
ORPHAN_AFTER = timedelta(seconds=10)


class Sink(Protocol):
    """A socket that frames are written to (the consumer)."""

    async def send_frame(self, frame: dict[str, Any]) -> None: ...


@dataclass(eq=False)
class Generation:
    conversation_id: int
    message: Message
    model: str
    think: bool | None
    attached: set[Sink] = field(default_factory=set)
    content: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    content_len: int = 0  # in code points, the unit of resume offsets
    thinking_len: int = 0
    requested_at: float = field(default_factory=time.perf_counter)
    upstream_at: float | None = None
    first_token_at: float | None = None
    first_answer_at: float | None = None
    finished: Finished | None = None
    task: asyncio.Task[None] | None = None

    @property
    def message_id(self) -> int:
        return self.message.pk

    def content_text(self) -> str:
        return "".join(self.content)

    def thinking_text(self) -> str:
        return "".join(self.thinking)

    def apply(self, events: Iterable[Event]) -> list[dict[str, Any]]:
        """Record one network read's events; return its frames, deltas of the same
        kind merged, in arrival order."""
        out: list[dict[str, Any]] = []
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
        return values


class Runner:
    def __init__(self) -> None:
        self._subscribers: dict[int, set[Sink]] = {}
        self._generations: dict[int, Generation] = {}
        self._claimed: set[int] = set()
        self._swept = False

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

    async def broadcast(self, conversation_id: int, frame: dict[str, Any]) -> None:
        await _send_all(self._subscribers.get(conversation_id, ()), frame)

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
    ) -> Generation:
        """Start streaming `message` (a claimed conversation's placeholder answer)."""
        await self.sweep_orphans()
        conversation_id = message.conversation_id
        generation = Generation(
            conversation_id=conversation_id,
            message=message,
            model=profile.tag,
            think=message.thinking_enabled,
            attached=set(self._subscribers.get(conversation_id, ())),
        )
        self._generations[conversation_id] = generation
        await _send_all(generation.attached, frames.start(generation))
        generation.task = asyncio.create_task(
            self._run(generation, profile, history), name=f"generation-{message.pk}"
        )
        return generation

    def stop(self, conversation_id: int) -> bool:
        generation = self._generations.get(conversation_id)
        if generation is None or generation.task is None or generation.task.done():
            return False
        generation.task.cancel()
        return True

    async def resume(
        self, sink: Sink, message_id: int, offset: int, thinking_offset: int
    ) -> bool:
        """Send `sink` what it misses of a live generation, then attach it.
        False if no generation of that message runs here."""
        generation = next(
            (g for g in self._generations.values() if g.message_id == message_id), None
        )
        if generation is None:
            return False
        await sink.send_frame(frames.start(generation))
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
        generation.attached.add(sink)
        return True

    async def shutdown(self) -> None:
        """Stop every generation and wait for their final saves."""
        tasks = [g.task for g in self._generations.values() if g.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def sweep_orphans(self) -> None:
        """Once per process: answers left streaming by a dead process."""
        if self._swept:
            return
        self._swept = True
        count = await database_sync_to_async(Message.objects.mark_orphans_interrupted)(
            older_than=ORPHAN_AFTER
        )
        if count:
            logger.warning("marked %d orphaned answers as interrupted", count)

    # The generation's task.

    async def _run(
        self,
        generation: Generation,
        profile: ModelProfile,
        history: list[dict[str, str]],
    ) -> None:
        checkpoint = asyncio.create_task(_checkpoint_loop(generation))
        status, error = Message.Status.DONE, None
        try:
            await self._relay(generation, profile, history)
        except asyncio.CancelledError:
            status = Message.Status.STOPPED
        except UpstreamError as exc:
            status, error = Message.Status.ERROR, exc
            logger.warning(
                "generation %s failed: %s", generation.message_id, exc.detail
            )
        except Exception as exc:
            logger.exception("generation %s crashed", generation.message_id)
            status = Message.Status.ERROR
            error = UpstreamError("internal_error", f"Internal error: {exc}")
        finally:
            checkpoint.cancel()
        await asyncio.gather(checkpoint, return_exceptions=True)
        try:
            await self._finish(generation, status, error)
        finally:
            self._generations.pop(generation.conversation_id, None)
            self.release(generation.conversation_id)

    async def _relay(
        self,
        generation: Generation,
        profile: ModelProfile,
        history: list[dict[str, str]],
    ) -> None:
        client = ollama_client(profile.base_url)
        generation.upstream_at = time.perf_counter()
        stream = client.chat(
            profile.tag,
            history,
            think=generation.think,
            options=profile.request_options(),
        )
        # aclosing: leaving the loop (done, stop, error) closes the upstream request,
        # which is how a model server learns to stop generating.
        async with aclosing(stream):
            async for events in stream:
                for frame in generation.apply(events):
                    await _send_all(generation.attached, frame)
                if generation.finished is not None:
                    break
        if generation.finished is None:
            raise UpstreamError(
                "stream_cut", "The model server ended the answer early."
            )

    async def _finish(
        self, generation: Generation, status: str, error: UpstreamError | None
    ) -> None:
        message = generation.message
        message.content = generation.content_text()
        message.thinking = generation.thinking_text()
        message.status = status
        if error is not None:
            message.error_code, message.error_detail = error.code, error.detail
        for name, value in generation.figures().items():
            setattr(message, name, value)
        await _save_message(message)
        subscribers = self._subscribers.get(generation.conversation_id, set())
        sinks = generation.attached | subscribers
        if error is not None:
            await _send_all(sinks, frames.error(message.pk, error.code, error.detail))
        await _send_all(sinks, frames.done(message))
        await _send_all(sinks, frames.message(message))


def _tail(parts: list[str], offset: int) -> str:
    return "".join(parts)[offset:]


async def _send_all(sinks: Iterable[Sink], frame: dict[str, Any]) -> None:
    for sink in list(sinks):
        try:
            await sink.send_frame(frame)
        except Exception:
            # A socket that fails to take a frame is going away; its disconnect
            # handler unsubscribes it. The other readers must not notice.
            logger.debug("dropped a frame for a closing socket", exc_info=True)


@database_sync_to_async
def _save_message(message: Message) -> None:
    message.save()


@database_sync_to_async
def _checkpoint(message_id: int, content: str, thinking: str) -> None:
    Message.objects.filter(pk=message_id, status=Message.Status.STREAMING).update(
        content=content, thinking=thinking, updated_at=timezone.now()
    )


async def _checkpoint_loop(generation: Generation) -> None:
    """Save the partial answer about once a second (also a heartbeat that tells
    other processes this answer is alive)."""
    while True:
        await asyncio.sleep(CHECKPOINT_SECONDS)
        await _checkpoint(
            generation.message_id, generation.content_text(), generation.thinking_text()
        )


runner = Runner()
