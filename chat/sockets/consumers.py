"""The conversation's owner's socket: validates frames and hands work to the
runner.

The protocol is documented in `chat.live.frames`. The socket does not own the
generation (see `chat.live.runner`): disconnecting only unsubscribes. What it
hears of the conversation, and how it resumes an answer, is its feed's
(`chat.sockets.feed`), the same as a shared link's viewer's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial

from channels.db import database_sync_to_async
from django.db import DatabaseError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from chat.live import control, early, frames, loop_state
from chat.live.admission import Plan
from chat.live.runner import runner
from chat.models import (
    AttachmentRefused,
    Conversation,
    DocumentsTooLarge,
    Retry,
    Turn,
)
from chat.models.quotas import QuotaReached
from chat.sockets import turns
from chat.sockets.base import LiveSocket
from chat.sockets.close_codes import CLOSE_FORBIDDEN, CLOSE_SIGNED_OUT
from chat.sockets.ratelimit import FrameLimiter
from chat.sockets.session_sockets import SessionBound

logger = logging.getLogger(__name__)

# A refused turn's error code, by the model's exception.
REFUSALS: dict[type[Exception], str] = {
    Conversation.NoModel: "no_model",
    Conversation.ModelForbidden: "model_forbidden",
    QuotaReached: "quota_reached",
    Conversation.Busy: "busy",
    Conversation.NothingToRegenerate: "nothing_to_regenerate",
    Conversation.NotAQuestion: "not_a_question",
    AttachmentRefused: "attachment_refused",
    DocumentsTooLarge: "document_too_large",
}


# A stored turn or retry, and its answer's first admission decision.
Begun = tuple[Turn | Retry, Plan]

NOT_STORED = gettext_noop(
    "Your message could not be saved: nothing was sent. Try again."
)


class ChatConsumer(SessionBound, LiveSocket):
    conversation_id: int

    async def connect(self) -> None:
        user = self.scope["user"]
        self.conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        self.limiter = FrameLimiter()
        # Accept first so the close code reaches the browser (a refused
        # handshake would only show an HTTP 403).
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_SIGNED_OUT)
            return
        owned = Conversation.objects.filter(pk=self.conversation_id, owner_id=user.pk)
        if not await database_sync_to_async(owned.exists)():
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self.open_feed(self.conversation_id)
        self.watch_session()

    async def disconnect(self, code: int) -> None:
        """Idempotent, and never raises (see `LiveSocket.__call__`)."""
        if self.left:
            return
        self.unwatch_session()
        await self.leave()

    async def handle(self, frame: frames.ClientFrame) -> None:
        """Act on one valid frame."""
        if frame["type"] == "send":
            await self.start_answer(
                frame["content"],
                frame["client_id"],
                files=(frame["attachments"], frame["truncate_documents"]),
            )
        elif frame["type"] == "stop":
            await control.request_stop(self.conversation_id)
        elif frame["type"] == "resume":
            assert self.feed is not None  # set in `connect`, or the socket was closed
            await self.feed.resume(
                frame["message_id"], frame["offset"], frame["thinking_offset"]
            )
        elif frame["type"] == "regenerate":
            answer_id = frame.get("message_id")
            await self.start_answer(
                "", "", retry=lambda c, placed: c.begin_regenerate(answer_id, placed)
            )
        elif frame["type"] == "edit":
            message_id, content = frame["message_id"], frame["content"]
            files, truncate = frame["attachments"], frame["truncate_documents"]
            await self.start_answer(
                "",
                "",
                retry=lambda c, placed: c.begin_edit(
                    message_id,
                    content,
                    attachments=files,
                    truncate_documents=truncate,
                    placed=placed,
                ),
            )
        elif frame["type"] == "preload":
            next_model = database_sync_to_async(Conversation.next_model)
            profile = await next_model(self.conversation_id)
            if profile is not None:
                preloads = loop_state.current().preloads
                await preloads.request(profile, self.conversation_id, runner.broadcast)

    async def send_frame(self, frame: frames.ServerFrame) -> None:
        await self.write(frame)

    async def start_answer(
        self,
        content: str,
        client_id: str,
        retry: turns.Retrying | None = None,
        files: tuple[list[str], bool] = ([], False),
    ) -> None:
        """A new turn: a sent question (with `files`: its attachments' ids and
        whether documents may be truncated), or with `retry` a regenerate or an
        edit (which replaces the last question and answer)."""
        if not runner.claim(self.conversation_id):
            await self.send_frame(
                frames.error(
                    None, "busy", _("Wait for the current answer, or stop it.")
                )
            )
            return
        admitted: turns.Admitted | None = None
        shown = early.Shown()
        begin = self._beginning(content, client_id, retry, files, shown)
        try:
            stored, admitted, asked = await early.store(begin)
            if admitted is None:  # refused, or waiting for a slot
                begun, plan = stored.result()
        except tuple(REFUSALS) as exc:
            runner.release(self.conversation_id)
            await self.send_frame(frames.error(None, REFUSALS[type(exc)], str(exc)))
            return
        except DatabaseError:
            # Nothing was stored (one transaction): say so, and the page gives
            # the text back to the composer; the socket stays open.
            logger.exception(
                "conversation %s: the turn was not stored", self.conversation_id
            )
            runner.release(self.conversation_id)
            await self.send_frame(frames.error(None, "not_stored", _(NOT_STORED)))
            return
        except BaseException:
            runner.release(self.conversation_id)
            raise
        if admitted is not None:
            # Admitted before the commit: the model server is asked now.
            await self._ask_while_storing(admitted, stored, asked, shown, content)
            return
        turn = begun.turn if isinstance(begun, Retry) else begun
        # The stored turn goes to the runner at once (no await before it): its
        # task tells the sockets, so nothing can leave the conversation claimed.
        await runner.start(
            turn.profile,
            turn.answer,
            turn.history,
            turn.options,
            told=told_of(begun),
            plan=plan,
        )

    def _beginning(
        self,
        content: str,
        client_id: str,
        retry: turns.Retrying | None,
        files: tuple[list[str], bool],
        shown: early.Shown,
    ) -> Callable[[Callable[[turns.Admitted], None]], Begun]:
        """What stores the turn (in the database thread, `early.store`). A sent
        question's turn is shown before its commit (`shown`)."""
        if retry is None:

            def show(turn: Turn) -> None:
                shown.set(turn_frames(turn), taken_back(turn))

            return partial(
                turns.begin,
                self.conversation_id,
                content,
                client_id,
                files,
                shown=show,
            )
        return partial(turns.begin_retry, self.conversation_id, retry)

    async def _ask_while_storing(
        self,
        admitted: turns.Admitted,
        stored: asyncio.Task[Begun],
        asked: Callable[[], None],
        shown: early.Shown,
        content: str,
    ) -> None:
        """Start the answer before its turn is committed (docs/latency.md,
        rule 8); if the commit fails, the runner closed the upstream request
        and took back what was told: the page gets its text back, as when
        nothing was stored."""
        turn = admitted.turn
        await runner.start(
            turn.profile,
            turn.answer,
            turn.history,
            turn.options,
            plan=admitted.plan,
            stored=early.told(stored, lambda begun: told_of(begun[0]), asked, shown),
        )
        # Started: told, or the commit failed (`Runner.start` returns then; or
        # its task never ran, its loop closing).
        failed = stored.exception() if stored.done() else None
        if failed is None:
            return
        logger.error(
            "conversation %s: the turn was not stored",
            self.conversation_id,
            exc_info=failed,
        )
        # Its text too: the question may have been shown, and echoed, before.
        await self.send_frame(
            frames.error(None, "not_stored", _(NOT_STORED), content=content)
        )


def told_of(begun: Turn | Retry) -> list[frames.ServerFrame]:
    """What every tab is told of a stored turn or retry (a retry's tabs are also
    told which messages the new turn replaces)."""
    if isinstance(begun, Retry):
        return [frames.removed(begun.removed), *turn_frames(begun.turn)]
    return turn_frames(begun)


def turn_frames(turn: Turn) -> list[frames.ServerFrame]:
    """What every tab is told of a stored turn: its question, and the title it
    gave the conversation."""
    told: list[frames.ServerFrame] = [frames.message(turn.question)]
    if turn.titled:
        told.append(frames.conversation(turn.question.conversation))
    return told


def taken_back(turn: Turn) -> list[frames.ServerFrame]:
    """What takes back a turn told before its commit, which then failed: its
    question and answer go, and the conversation is untitled again."""
    frames_back: list[frames.ServerFrame] = [
        frames.removed([turn.question.pk, turn.answer.pk])
    ]
    if turn.titled:
        frames_back.append(frames.untitled(turn.question.conversation))
    return frames_back
