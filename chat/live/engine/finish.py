"""The end of an answer: its final save and final frames, or, when the database
refuses the save, the answer marked failed with the text of its last checkpoint.
A database that is away is waited for: the save is retried until it succeeds.

The runner (`Runner._run`) calls these once the relay ended, then frees the
conversation and sends the frames on to other processes' sockets.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from collections.abc import Set as AbstractSet

from channels.db import database_sync_to_async
from django.db import DatabaseError, InterfaceError, OperationalError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from chat.live.engine.generation import Generation, Sink, send_all
from chat.live.engine.observers import answer_finished
from chat.live.protocol import frames
from chat.models import Message, ModelProfile
from chat.models.shared_messages import owner_detail
from chat.rendering import markdown
from chat.upstream import UpstreamError

logger = logging.getLogger(__name__)

# This process's sockets of the answer's conversation (`Runner.subscribe`).
Viewers = Callable[[], AbstractSet[Sink]]

# The final save while the database is away: tried again after RETRY_SECONDS,
# doubled up to RETRY_MAX_SECONDS, until it succeeds or the process stops.
RETRY_SECONDS = 0.5
RETRY_MAX_SECONDS = 5.0

SAVE_FAILED = gettext_noop(
    "The answer could not be saved; its text up to the last save (about a second "
    "before the end) is kept."
)


def outcome(
    generation: Generation, ended: BaseException | None
) -> tuple[str, UpstreamError | None]:
    """The answer's status, and the error it is stored with, from how its task
    ended: `ended` is what the relay raised (None: the answer is whole)."""
    if ended is None:
        return Message.Status.DONE, None
    if isinstance(ended, asyncio.CancelledError):
        if generation.shutting_down:
            detail = _("The server shut down while this answer was being written.")
            return Message.Status.INTERRUPTED, UpstreamError("interrupted", detail)
        if generation.failure is not None:  # the first-token watch stopped it
            return Message.Status.ERROR, generation.failure
        return Message.Status.STOPPED, None
    if isinstance(ended, UpstreamError):
        logger.warning("generation %s failed: %s", generation.message_id, ended.detail)
        return Message.Status.ERROR, _in_readers_language(ended)
    logger.error("generation %s crashed", generation.message_id, exc_info=ended)
    error = UpstreamError(
        "internal_error", _("Internal error: %(error)s") % {"error": ended}
    )
    return Message.Status.ERROR, error


def _in_readers_language(error: UpstreamError) -> UpstreamError:
    """`error` as its reader is shown it (frame and stored answer): raised in
    the model-server seam, its English detail follows the code's sentence in
    the reader's language (`owner_detail`); raised here in chat/live, its
    detail is already in that language."""
    innermost = error.__traceback__
    while innermost is not None and innermost.tb_next is not None:
        innermost = innermost.tb_next
    raised_in = innermost.tb_frame.f_globals.get("__name__", "") if innermost else ""
    if not raised_in.startswith("chat.upstream."):
        return error
    detail = owner_detail(error.code, error.detail)
    return UpstreamError(error.code, detail, status=error.status)


async def save(
    generation: Generation,
    status: str,
    error: UpstreamError | None,
    viewers: Viewers,
) -> list[frames.ServerFrame]:
    """Store the answer with its figures, and send its final frames to its
    sockets and `viewers()`; return those frames (its `closing` from here on:
    a socket resuming now is sent them), for other processes' sockets."""
    message = generation.message
    message.content = generation.content_text()
    message.thinking = generation.thinking_text()
    steps = generation.step_parts()
    if steps is not None:
        message.steps = steps
    message.status = status
    if error is not None:
        message.error_code, message.error_detail = error.code, error.detail
    for name, value in generation.figures().items():
        setattr(message, name, value)
    await _save_when_reachable(message)
    answer_finished(message)  # counters only: no I/O
    # A long answer's markdown is rendered in a helper process first; a short
    # one here, on the loop (in a worker thread it would hold the GIL in 5 ms
    # slices and stall the relay of every other answer even longer).
    await markdown.prerender(message.content)
    final = frames.message(message)
    if generation.publisher is not None:
        await generation.publisher.flush()
    closing: list[frames.ServerFrame] = [frames.done(message), final]
    if error is not None:
        closing.insert(0, frames.error(message.pk, error.code, error.detail))
    # From here a resuming socket is sent these by `resume`, not attached.
    generation.closing = closing
    sinks = generation.attached | viewers()
    for frame in closing:
        await send_all(sinks, frame)
    return closing


async def unsaved(generation: Generation, viewers: Viewers) -> list[frames.ServerFrame]:
    """The final save failed: the answer is marked failed, keeping the text of
    its last checkpoint, if the database takes that much (a streaming row would
    hold its model slot until the orphan sweep); its sockets and `viewers()` are
    told either way. Returns those frames (its `closing` from here on)."""
    message = generation.message
    message.status = Message.Status.ERROR
    message.error_code, message.error_detail = "save_failed", _(SAVE_FAILED)
    try:
        await _mark_unsaved(message)
    except Exception:
        logger.warning("answer %s: marking it failed failed", message.pk)
    closing: list[frames.ServerFrame] = [
        frames.error(message.pk, message.error_code, _(SAVE_FAILED))
    ]
    closing.append(frames.done(message))
    generation.closing = closing
    for frame in closing:
        await send_all(generation.attached | viewers(), frame)
    return closing


async def learn_token_ratio(profile: ModelProfile, message: Message) -> None:
    """Calibrate the profile's token estimate from the answer's prompt figures
    (after the answer is saved and told). Most answers of a settled profile
    teach nothing: they make no trip to the database thread, where the next
    question's turn may be waiting."""
    if profile.teaching_ratio(message) is None:
        return
    try:
        await database_sync_to_async(profile.learn_from)(message)
    except DatabaseError:
        logger.warning("calibrating %s failed", profile.tag, exc_info=True)


async def _save_when_reachable(message: Message) -> None:
    """Save the whole answer, retried for as long as the database is away (or
    the pool has no connection for it yet): the text is in memory, and its
    generation stays registered meanwhile, so the heartbeat goes on and no
    other process takes the answer for an orphan
    (`chat.live.engine.processes.liveness`). Any
    other refusal is raised (`unsaved`)."""
    delay = RETRY_SECONDS
    while True:
        try:
            await _save_message(message)
            return
        except (OperationalError, InterfaceError) as exc:
            logger.warning(
                "answer %s: its final save failed (%s), tried again in %g s",
                message.pk,
                exc,
                delay,
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, RETRY_MAX_SECONDS)


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
