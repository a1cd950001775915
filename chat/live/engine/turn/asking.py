"""An admitted answer asked of the model server while its turn is committed
(docs/latency.md, rule 8; `chat.live.engine.turn.early`): the relay starts at
once, and its frames wait for the turn's announcement, which waits for the
commit, or for the turn's rows to be written when it is shown before (a
commit that fails then takes it back from every viewer). Run by the runner's
task for the answer (`Runner._run`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from chat.live.engine.generation import Generation
from chat.live.engine.turn import early
from chat.live.engine.turn.tools import converse
from chat.live.protocol import frames
from chat.models import ModelProfile


class Announcer(Protocol):
    """What the asking needs of the runner."""

    @property
    def spans_processes(self) -> bool: ...

    async def announce(
        self, generation: Generation, told: Sequence[frames.ServerFrame]
    ) -> None: ...

    def publish(self, generation: Generation) -> None: ...

    async def broadcast(
        self, conversation_id: int, *sent: frames.ServerFrame
    ) -> None: ...


async def ask_while_storing(
    runner: Announcer,
    generation: Generation,
    profile: ModelProfile,
    history: list[dict[str, str]],
    stored: early.Storing,
) -> None:
    """Relay the answer while its turn is committed (docs/latency.md, rule
    8). The relay writes no frame before the turn is announced (its
    `ready`): every viewer gets the turn and the start frame first, as when
    the turn was announced before the request. A sent question's turn is
    announced once its rows are inserted, before the commit; a commit that
    fails then takes it back from every viewer."""
    conversation_id = generation.conversation_id
    ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def not_stored(exc: BaseException) -> None:
        # Not committed, and the request went out: it is closed.
        generation.unstored = exc
        assert generation.task is not None
        generation.task.cancel()

    # Told before a commit that then failed: what takes it back.
    taken_back: list[frames.ServerFrame] = []

    async def announce() -> None:
        nonlocal taken_back
        try:
            try:
                told, undo = await stored.told()
            except BaseException as exc:
                not_stored(exc)
                raise
            if generation.publisher is not None:
                # Its answer's row has its id now (`turn_rows.Pending.write`).
                generation.publisher.message_id = generation.message_id
            try:
                await runner.announce(generation, told)
            except Exception as exc:
                ready.set_exception(exc)  # the relay ends with it
                raise
            ready.set_result(None)
        finally:
            if not ready.done():  # not stored (`unstored`), or shutting down
                ready.cancel()
        if not undo:  # committed already
            return
        try:
            await stored.committed
        except BaseException as exc:
            taken_back = undo
            not_stored(exc)
            raise

    if runner.spans_processes:
        # The relay takes its publisher as it starts, before the
        # announcement; it publishes nothing until then (`ready`).
        runner.publish(generation)
    announcing = asyncio.create_task(announce(), name="announce")
    # The caller goes on once the turn is committed and told (or taken back).
    announcing.add_done_callback(
        lambda _: None if taken_back else generation.announced.set()
    )

    async def tell(conversation_id: int, frame: frames.ModelFrame) -> None:
        # The first-token watch's news ("loading model") follows the start.
        await asyncio.wait([ready])
        told = not ready.cancelled() and ready.exception() is None
        if told and generation.unstored is None:
            await runner.broadcast(conversation_id, frame)

    try:
        if generation.stop_asked:  # a stop before the task began
            raise asyncio.CancelledError
        # Shielded: a stop (or the client going away) cancels this task
        # while the relay waits for the announcement; passed on to
        # `ready`, the cancel would end the first-token watch's wait for
        # it (`tell`). Only the commit's outcome decides whether the turn
        # was stored (`announcing` is never cancelled: a turn committed
        # after all and taken for one not stored would leave its answer
        # streaming for the orphan sweep to mark interrupted).
        await converse(
            generation,
            profile,
            history,
            tell,
            ready=asyncio.shield(ready),
            asked=stored.asked,
        )
    finally:
        stored.asked()  # it was not, if the relay ended before the request
        # The answer's end is told after its start, and never before its
        # turn is committed (or known not to be, and taken back).
        if not announcing.done():
            await asyncio.wait([announcing])
        if not announcing.cancelled():
            announcing.exception()  # kept in `unstored`
        # Taken back once the relay ended (no delta of it follows), and
        # before the caller tells its socket the turn was not stored.
        await runner.broadcast(conversation_id, *taken_back)
        generation.announced.set()
