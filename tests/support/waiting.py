"""One way for a test to wait for work the site does on its own time.

Some work comes after the frames that a test sees: the runner saves an answer
and sends `done` and `message`, and only then frees the answer's place in line
(`chat.live.engine.admission.release`), wakes the other waiters and calibrates the model
profile (`chat.live.engine.finish.learn_token_ratio`); a checkpoint lands about once a
second; a stopped answer's task ends on the loop's next turn. A test that reads
that work's result right after the frame passes on a quiet machine and fails on
a busy one. So it waits for the work itself: `until` polls a check of the
state (the database, the runner, the simulator) until it holds, with a deadline
generous enough for a loaded 2-core machine. Never a sleep standing in for the
work, never the frame that happens to come first.

`until(check, what)` in async tests (`check` may be a coroutine function, e.g.
an ORM `afirst`), `until_sync(check, what)` in sync ones (browser and
live-server tests). Both return the check's first truthy value; past the
deadline the test fails with `what`.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from chat.models import Message, ModelProfile

T = TypeVar("T")

# Seconds. Generous: the suite must pass beside CPU-burning processes, and a
# check that holds returns at once, so a long deadline costs a passing test
# nothing.
DEADLINE = 20.0
INTERVAL = 0.02


class NeverHappened(AssertionError):
    pass


class _Deadline:
    def __init__(self, what: str, timeout: float) -> None:
        self.what, self.timeout = what, timeout
        self.at = time.monotonic() + timeout

    def check(self) -> None:
        if time.monotonic() > self.at:
            raise NeverHappened(f"{self.what} (waited {self.timeout:g} s)")


async def until(
    check: Callable[[], Awaitable[T] | T],
    what: str,
    timeout: float = DEADLINE,
    interval: float = INTERVAL,
) -> T:
    """Poll `check` (sync or async) until it returns a truthy value; that value."""

    async def value() -> T:
        result = check()
        return await result if inspect.isawaitable(result) else result  # type: ignore[return-value]

    deadline = _Deadline(what, timeout)
    while not (found := await value()):
        deadline.check()
        await asyncio.sleep(interval)
    return found


def until_sync(
    check: Callable[[], T],
    what: str,
    timeout: float = DEADLINE,
    interval: float = INTERVAL,
) -> T:
    """`until` for sync tests: `check` is a plain function."""
    deadline = _Deadline(what, timeout)
    while not (found := check()):
        deadline.check()
        time.sleep(interval)
    return found


# The site's own after-work, named once. (Imports inside:
# `tests.support.plugins.fixtures`, a
# plugin loaded before Django is set up, uses this module.)


async def settled(message_id: int, timeout: float = DEADLINE) -> Message:
    """The answer, once its final save landed (no longer streaming)."""
    from chat.models import Message

    return await until(
        lambda: (
            Message.objects.exclude(status=Message.Status.STREAMING)
            .filter(pk=message_id)
            .afirst()
        ),
        f"answer {message_id} stayed streaming",
        timeout,
    )


async def ticket_released(message_id: int, timeout: float = DEADLINE) -> None:
    """The answer's admission ticket was dropped (an answer that never reached
    the model gives its place in line back after its final frames)."""
    from chat.models import Ticket

    async def gone() -> bool:
        return not await Ticket.objects.filter(message_id=message_id).aexists()

    await until(gone, f"the ticket of answer {message_id} stayed", timeout)


async def calibrated(profile_id: int, timeout: float = DEADLINE) -> ModelProfile:
    """The model profile, once an answer's prompt figures calibrated it."""
    from chat.models import ModelProfile

    return await until(
        lambda: ModelProfile.objects.filter(
            pk=profile_id, chars_per_token__isnull=False
        ).afirst(),
        f"profile {profile_id} was never calibrated",
        timeout,
    )


async def idle(conversation_id: int, timeout: float = DEADLINE) -> None:
    """This process's runner no longer holds the conversation (its answer's
    task has run its clean-up)."""
    from chat.live.engine.runner import runner

    await until(
        lambda: not runner.is_busy(conversation_id),
        f"conversation {conversation_id} stayed busy",
        timeout,
    )


def _unfinished_generations() -> list[asyncio.Task[object]]:
    current = asyncio.current_task()
    return [
        task
        for task in asyncio.all_tasks()
        if task is not current
        and not task.done()
        and task.get_name().startswith("generation-")
    ]


async def generations_ended(timeout: float = DEADLINE) -> None:
    """Every answer's task of this loop has ended, its after-work (ticket,
    calibration, wake-ups) included: the next test starts on a quiet runner."""
    tasks = _unfinished_generations()
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)
