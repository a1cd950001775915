"""A turn's model slot while its tools run: given back to the fair queue, so a
slow tool never holds a GPU slot, and taken again, ahead of the answers that
have not begun, before the next model call (`chat.live.engine.admission`).

The answer's ticket is paused (out of line: no slot held, no place in it)
while the tools run, then waits again with priority; everything else about
the line is the admission's.

Only once the tools have run TOOL_SLOT_GRACE_MS (`lend`): giving the slot
back and taking it again are three trips to the database between a tool's
result and the next model call, which a quick tool (most calls: an MCP tool
over stdio answers in about a millisecond) would pay for nothing
(`python -m bench.tools`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from channels.db import database_sync_to_async
from django.conf import settings

from chat.live.engine import admission
from chat.models import Ticket


@database_sync_to_async
def _pause(message_id: int) -> int:
    return Ticket.objects.filter(message_id=message_id).update(paused=True, served=None)


@database_sync_to_async
def _unpause(message_id: int) -> int:
    return Ticket.objects.filter(message_id=message_id).update(
        paused=False, priority=True
    )


async def give_back(message_id: int) -> bool:
    """Give the answer's slot to the next in line (its tools run now). False
    when it holds none (an answer without a ticket)."""
    if not await _pause(message_id):
        return False
    # Those waiting, on any process, decide again.
    await admission.release(message_id, served=True)
    return True


async def take_back(
    message_id: int, profile_id: int, tell: Callable[[int], Awaitable[None]]
) -> None:
    """Return once the answer holds a slot again, first in line; meanwhile
    `tell` its place when it waits."""
    await _unpause(message_id)
    decided = await admission.recheck()
    await admission.wait_for_slot(message_id, profile_id, tell, first=decided)


# Gives not yet begun when their tools ended, kept until their cancel is
# done (a task nobody holds may vanish).
_called_off: set[asyncio.Task[bool]] = set()


class Lent:
    """The slot, given back if the tools run past the grace (`lend`)."""

    def __init__(self, message_id: int, grace: float) -> None:
        self.giving = False
        self._task = asyncio.get_running_loop().create_task(
            self._later(message_id, grace), name="give the slot back"
        )

    async def _later(self, message_id: int, grace: float) -> bool:
        if grace > 0:
            await asyncio.sleep(grace)
        self.giving = True  # from here on it runs to its end
        return await give_back(message_id)

    def call_off(self) -> None:
        """The tools are over: a give not yet begun never happens."""
        if not self.giving and not self._task.done():
            self._task.cancel()
            _called_off.add(self._task)
            self._task.add_done_callback(_called_off.discard)

    async def given(self) -> bool:
        """Call off the give if it has not begun; whether the slot was given
        back (then it must be taken back, `take_back`)."""
        self.call_off()
        if not self.giving:
            return False
        return await self._task


def lend(message_id: int) -> Lent:
    """While a turn's tools run: its slot goes back to the line once they have
    run TOOL_SLOT_GRACE_MS (at once with 0)."""
    return Lent(message_id, settings.TOOL_SLOT_GRACE_MS / 1000)
