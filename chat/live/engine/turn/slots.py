"""A turn's model slot while its tools run: given back to the fair queue, so a
slow tool never holds a GPU slot, and taken again, ahead of the answers that
have not begun, before the next model call (`chat.live.engine.admission`).

The answer's ticket is paused (out of line: no slot held, no place in it)
while the tools run, then waits again with priority; everything else about
the line is the admission's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from channels.db import database_sync_to_async

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
