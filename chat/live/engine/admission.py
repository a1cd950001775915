"""Admission control: how many answers run at once, per user and per model.

Two limits, both global across every Daphne process sharing the database:
`SiteDefaults.generations_per_user` (answers one user may have running) and
`ModelProfile.parallel_slots` (answers the model server runs at once, e.g.
`OLLAMA_NUM_PARALLEL`); 0 means no limit. An answer over a limit waits in a fair
queue: per model, round-robin across users (the user served longest ago, or
never, goes first), first come first served within a user.

The database is the source of truth. Each answer has a `Ticket`; deciding who
runs is one transaction that locks the one `SiteDefaults` row (so every process
takes turns), reads the tickets, and numbers those that now fit as admitted. A
transaction that admits a new answer locks that row before any other
(`chat.models.admission.Line`, the lock order).
Whoever frees a slot re-runs that decision and wakes the waiters of every
process through the channel layer; a waiter also re-checks about once a second,
which is how a slot held by a process that died comes back (the orphan sweep
marks its answer interrupted, and only streaming answers hold slots).

None of this is on the per-token path: it runs before the upstream request and
after the final save.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TypeVar

from channels.db import database_sync_to_async
from channels.layers import BaseChannelLayer, get_channel_layer
from django.db import DatabaseError, transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.live.engine.processes import layer as guarded_layer
from chat.live.protocol import channel_events
from chat.models import Conversation, Message, ModelProfile, Ticket
from chat.models.admission import Line
from chat.upstream import UpstreamError

logger = logging.getLogger(__name__)

WAKE_GROUP = channel_events.ADMISSION_GROUP
WAKE_EVENT = dict(channel_events.ADMISSION_WAKE)  # channels' layers take a plain dict
# The fallback re-check: a slot freed by a dead process, or a lost wake-up.
POLL_SECONDS = 1.0
# Finished answers' tickets are kept this long: they tell whose turn it is.
KEEP_SERVED = timedelta(hours=1)
STREAMING = Message.Status.STREAMING

T = TypeVar("T")


@dataclass(frozen=True)
class Entry:
    """A ticket, as the decision sees it."""

    message_id: int
    user_id: int
    profile_id: int
    served: int | None  # its admission's number; None while waiting
    live: bool = True  # its answer is still streaming (and runs no tool)
    priority: bool = False  # back from a tool run: goes first


@dataclass(frozen=True)
class Plan:
    admit: list[int]  # message ids that now get a slot, in order
    positions: dict[int, int]  # message id -> 1-based place in its model's queue
    # message id -> its admission's number, for the admitted ones not stored yet
    # (`take_ticket`'s own, whose ticket is written with it)
    numbers: dict[int, int] = field(default_factory=dict)


def fair_order(entries: list[Entry]) -> list[Entry]:
    """One model's waiting tickets in the order they are to run: round-robin
    across users, the user served longest ago (or never) first, each user's own
    tickets first come first served. `entries` hold the model's finished and
    running tickets too: they say when each user was last served."""
    last: dict[int, int] = {}
    queues: dict[int, list[Entry]] = {}
    # Back from a tool run (`chat.live.engine.turn.slots`): first, in order.
    back: list[Entry] = []
    for entry in entries:
        if entry.served is not None:
            last[entry.user_id] = max(last.get(entry.user_id, 0), entry.served)
        elif entry.live and entry.priority:
            back.append(entry)
        elif entry.live:
            queues.setdefault(entry.user_id, []).append(entry)
    turn = max(last.values(), default=0)
    # (last served, first waiting ticket's arrival index, user)
    heap = [
        (last.get(user, 0), queue[0].message_id, user) for user, queue in queues.items()
    ]
    heapq.heapify(heap)
    order: list[Entry] = back
    while heap:
        _, _, user = heapq.heappop(heap)
        queue = queues[user]
        order.append(queue.pop(0))
        if queue:
            turn += 1
            heapq.heappush(heap, (turn, queue[0].message_id, user))
    return order


def plan(entries: Iterable[Entry], per_user: int, slots: dict[int, int]) -> Plan:
    """Who runs next, and everyone else's place in line. `entries` are every
    known ticket, in the order they were asked for; `slots` is each profile's
    parallel slots (0: no limit)."""
    entries = list(entries)
    running_user: Counter[int] = Counter()
    running_profile: Counter[int] = Counter()
    by_profile: dict[int, list[Entry]] = {}
    for entry in entries:
        by_profile.setdefault(entry.profile_id, []).append(entry)
        if entry.served is not None and entry.live:
            running_user[entry.user_id] += 1
            running_profile[entry.profile_id] += 1
    admit: list[int] = []
    positions: dict[int, int] = {}
    for profile_id in sorted(by_profile):
        limit = slots.get(profile_id, 0)
        waiting = 0
        for entry in fair_order(by_profile[profile_id]):
            user_free = not per_user or running_user[entry.user_id] < per_user
            model_free = not limit or running_profile[profile_id] < limit
            if user_free and model_free:
                admit.append(entry.message_id)
                running_user[entry.user_id] += 1
                running_profile[profile_id] += 1
            else:
                waiting += 1
                positions[entry.message_id] = waiting
    return Plan(admit, positions)


def _decide(
    slots: dict[int, int] | None = None,
    new: Entry | None = None,
    line: Line | None = None,
) -> Plan:
    """Admit every waiting answer that fits now (inside a transaction).
    `slots`: parallel slots of profiles the caller has at hand. `new`: an answer
    whose ticket is not written yet (`take_ticket`): if admitted, its number is
    in the plan's `numbers`, for its ticket. `line`: the site's row and the
    tickets, when the transaction read them already (`Line.read`)."""
    # Whoever holds the site's row decides; every other process waits its turn
    # (PostgreSQL; SQLite has one writer at a time anyway).
    if line is None:
        line, _ = Line.read()
    site = line.site
    tickets = [Entry(m, u, p, s, live, back) for m, u, p, s, back, live in line.tickets]
    turn = max((e.served or 0 for e in tickets), default=0)
    # In the order they asked: answers' ids grow.
    entries = sorted(
        [*(e for e in tickets if e.live), *([new] if new else [])],
        key=lambda e: e.message_id,
    )
    waiting = [e for e in entries if e.served is None]
    if not waiting:
        return Plan([], {})
    if len(waiting) == 1:  # nobody to be fair to (the usual case)
        served: Iterable[tuple[int, int, int]] = ()
    else:
        # Whose turn it is: when each waiting user was last served at that model.
        served = (
            Ticket.objects.filter(
                user_id__in={e.user_id for e in waiting},
                profile_id__in={e.profile_id for e in waiting},
                served__isnull=False,
            )
            .values_list("user_id", "profile_id")
            .annotate(last=Max("served"))
        )
    history = [
        Entry(0, user, profile, last, live=False) for user, profile, last in served
    ]
    slots = dict(slots or {})
    unknown = {e.profile_id for e in waiting} - slots.keys()
    if unknown:
        slots.update(
            ModelProfile.objects.filter(pk__in=unknown).values_list(
                "pk", "parallel_slots"
            )
        )
    decided = plan([*history, *entries], site.generations_per_user, slots)
    if decided.admit:
        for number, message_id in enumerate(decided.admit, start=turn + 1):
            if new is not None and message_id == new.message_id:
                decided.numbers[message_id] = number
            else:
                Ticket.objects.filter(message_id=message_id).update(served=number)
    return decided


# The id a new answer is decided under before its row exists (`place`): the
# newest, as the answers' ids grow and it is the last to ask.
UNSTORED = 2**62


def take_ticket(
    answer: Message,
    profile: ModelProfile,
    user_id: int,
    admitted: Callable[[Plan], None] | None = None,
    line: Line | None = None,
) -> Plan:
    """In the transaction that stored the question and its answer's placeholder
    (no commit of its own): the first decision and the answer's ticket, which
    the caller hands to `wait_for_slot` (through `Runner.start`). See `place`."""
    return place(profile, user_id, admitted, line)(answer)


def place(
    profile: ModelProfile,
    user_id: int,
    admitted: Callable[[Plan], None] | None = None,
    line: Line | None = None,
) -> Callable[[Message], Plan]:
    """The first decision of a new answer of `user_id` at `profile`, taken
    before its row is written (docs/latency.md, rule 8); returns what writes its
    ticket once the row exists, in the same transaction, and gives the decision
    with the answer's id.

    `admitted(plan)` is called the moment the answer is admitted, before its
    rows and ticket are written (the plan knows it as UNSTORED): the site's row
    stays locked until the commit, so no other decision can be taken in between
    and the model server can be asked while the rest is stored. `line`: what
    the transaction read first (`Line.read`, the lock order of
    `chat.models.admission`); else read here."""
    new = Entry(UNSTORED, user_id, profile.pk, None)
    decided = _decide({profile.pk: profile.parallel_slots}, new, line)
    served = decided.numbers.get(UNSTORED)
    if served is not None and admitted is not None:
        admitted(decided)

    def write(answer: Message) -> Plan:
        _prune()
        Ticket.objects.create(
            message=answer, user_id=user_id, profile=profile, served=served
        )
        return _named(decided, answer.pk)

    return write


def _named(decided: Plan, message_id: int) -> Plan:
    """`decided`, its new answer (UNSTORED) known by its id."""

    def named(pk: int) -> int:
        return message_id if pk == UNSTORED else pk

    return Plan(
        [named(pk) for pk in decided.admit],
        {named(pk): n for pk, n in decided.positions.items()},
        {named(pk): n for pk, n in decided.numbers.items()},
    )


_pruned_at = 0.0


def _prune() -> None:
    """Forget finished answers' tickets older than KEEP_SERVED (at most once a
    minute per process)."""
    global _pruned_at
    now = time.monotonic()
    if now - _pruned_at < 60:
        return
    _pruned_at = now
    Ticket.objects.exclude(message__status=STREAMING).filter(
        created_at__lt=timezone.now() - KEEP_SERVED
    ).delete()


@database_sync_to_async
def enqueue(message_id: int, profile_id: int) -> Plan:
    """Give the answer its ticket and decide."""
    with transaction.atomic():
        owner_id = (
            Conversation.objects.filter(messages__pk=message_id)
            .values_list("owner_id", flat=True)
            .get()
        )
        Ticket.objects.get_or_create(
            message_id=message_id,
            defaults={"user_id": owner_id, "profile_id": profile_id},
        )
        return _decide()


@database_sync_to_async
def recheck() -> Plan:
    with transaction.atomic():
        return _decide()


@database_sync_to_async
def is_admitted(message_id: int) -> bool:
    return Ticket.objects.filter(message_id=message_id, served__isnull=False).exists()


@database_sync_to_async
def _drop(message_id: int) -> None:
    """An answer never served (stopped in line) tells nothing: its ticket goes."""
    Ticket.objects.filter(message_id=message_id).delete()


async def wait_for_slot(
    message_id: int,
    profile_id: int,
    tell: Callable[[int], Awaitable[None]],
    first: Plan | None = None,
) -> None:
    """Return once the answer holds a slot; meanwhile `tell` its place in line
    whenever it changes. `first`: the decision taken with its ticket
    (`take_ticket`); without one it gets its ticket here. Cancelling the wait (a
    stop) leaves the ticket to `release`."""
    layer = get_channel_layer()
    try:
        if first is None:
            first = await _unless_stopped(enqueue(message_id, profile_id))
        decided = first
    except DatabaseError as exc:
        logger.warning("answer %s could not join the queue: %s", message_id, exc)
        raise UpstreamError(
            "queue_unavailable",
            _(
                "The answer could not be queued: the database did not answer. "
                "Try again in a moment."
            ),
        ) from exc
    if _admitted(decided, message_id):
        await _wake_others(layer, decided, message_id)
        return
    if layer is not None:
        # A newcomer may go ahead of others (fairness): they update their places.
        await _quietly(layer.group_send(WAKE_GROUP, WAKE_EVENT))
    channel = await _listen(layer)
    told: int | None = None
    try:
        while True:
            position = decided.positions.get(message_id)
            if position is not None and position != told:
                await tell(position)
                told = position
            await _next_wake(layer, channel)
            try:
                decided = await _unless_stopped(recheck())
            except DatabaseError:
                # Briefly away: keep the place in line and ask again.
                logger.warning("admission re-check failed", exc_info=True)
                continue
            if _admitted(decided, message_id):
                await _wake_others(layer, decided, message_id)
                return
            if message_id not in decided.positions and await _unless_stopped(
                is_admitted(message_id)
            ):
                return  # another waiter's decision admitted this one
    finally:
        if channel is not None:
            await guarded_layer.leave(WAKE_GROUP, channel)


async def release(message_id: int, *, served: bool) -> None:
    """The answer is over (saved): its slot or place in line goes to the next,
    and every waiter, on any process, hears of it and decides again.

    `served`: it reached the model server. Its ticket then needs no change (a
    finished answer holds no slot; the ticket says whose turn it was), so the
    usual end of an answer costs no trip to the database."""
    if not served:
        try:
            await _drop(message_id)
        except Exception:
            # Its answer is no longer streaming: the ticket counts for nothing.
            logger.warning(
                "dropping the ticket of %s failed", message_id, exc_info=True
            )
    layer = get_channel_layer()
    if layer is not None:
        await _quietly(layer.group_send(WAKE_GROUP, WAKE_EVENT))


async def _unless_stopped(call: Awaitable[T]) -> T:
    """Await a database call, then honour a stop that came meanwhile: asgiref
    lets the call finish and swallows the task's cancellation."""
    result = await call
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
    return result


def _admitted(decided: Plan, message_id: int) -> bool:
    return message_id in decided.admit


async def _wake_others(
    layer: BaseChannelLayer | None, decided: Plan, message_id: int
) -> None:
    """Others admitted in the same decision wait on another process maybe."""
    if layer is not None and any(pk != message_id for pk in decided.admit):
        await _quietly(layer.group_send(WAKE_GROUP, WAKE_EVENT))


async def _listen(layer: BaseChannelLayer | None) -> str | None:
    if layer is None:
        return None
    try:
        channel = await layer.new_channel()
    except Exception:
        logger.warning("no admission wake-ups: polling", exc_info=True)
        return None
    # Until it joined (Redis away, or restarted and re-joined), it polls.
    await guarded_layer.join(WAKE_GROUP, channel)
    return channel


async def _next_wake(layer: BaseChannelLayer | None, channel: str | None) -> None:
    """A wake-up, or the poll interval, whichever comes first."""
    if layer is None or channel is None:
        await asyncio.sleep(POLL_SECONDS)
        return
    try:
        async with asyncio.timeout(POLL_SECONDS):
            await layer.receive(channel)
    except TimeoutError:
        pass
    except Exception:
        logger.warning("admission wake-up failed", exc_info=True)
        await asyncio.sleep(POLL_SECONDS)


async def _quietly(call: Awaitable[object]) -> None:
    try:
        await call
    except Exception:
        logger.warning("channel layer call failed", exc_info=True)
