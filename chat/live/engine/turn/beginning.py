"""One way to begin a turn, for the conversation's socket (`chat.sockets`) and
the API (`chat.api`) alike (docs/latency.md, rule 9): access, quotas, the
answer's place in the fair queue (`chat.live.engine.admission`), storing the question
and the answer's row, and asking the model first. Each caller says what it asks
(`Question`, `Regenerate`, `Edit`, `ApiQuestion`) and turns what comes back,
`Started` or `Refused`, into frames or an HTTP response: a new refusal or quota
rule is written once, in the models (`chat.models.turn_rows`, `quotas`) and in
`REFUSALS`.

The model server is asked first (rule 8): in the database thread (`store`)
the turn is checked and its rows prepared (`turn_rows.prepare_*`), its answer
is placed in line before they are written, and the moment it is admitted the
thread hands it to the event loop (`early.store`), which sends the upstream
request while the thread writes the question, the answer, its ticket and the
conversation's row and commits. The site's row stays locked until then
(`admission.place`), so the decision is as global as before; a commit that
fails after the request went out closes it (`Runner.start`, `stored`). A sent
question without files is also shown before the commit, once its rows are
written: a commit that fails after that takes it back.

The turn owns its generation (`Started.generation`, run by the runner): a turn
of several steps (model calls, tool runs) grows here, not in its callers.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, NamedTuple

from django.db import DatabaseError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from chat.live.engine import admission
from chat.live.engine.generation import Generation, Sink
from chat.live.engine.runner import runner
from chat.live.engine.turn import early, offer
from chat.live.engine.turn.steps import Steps
from chat.live.protocol import frames
from chat.models import (
    ApiKey,
    AttachmentRefused,
    ClientTools,
    Conversation,
    DocumentsTooLarge,
    ModelProfile,
    Pending,
    Retry,
    ThinkingMode,
    Turn,
    turn_rows,
)
from chat.models.admission import Line
from chat.models.quotas import QuotaReached

logger = logging.getLogger(__name__)

# A refused turn's code, by the models' exception (nothing is stored then).
REFUSALS: dict[type[Exception], str] = {
    ModelProfile.DoesNotExist: "model_not_found",
    Conversation.NoModel: "no_model",
    Conversation.ModelForbidden: "model_forbidden",
    QuotaReached: "quota_reached",
    Conversation.Busy: "busy",
    Conversation.NothingToRegenerate: "nothing_to_regenerate",
    Conversation.NotAQuestion: "not_a_question",
    AttachmentRefused: "attachment_refused",
    DocumentsTooLarge: "document_too_large",
}

NOT_STORED = gettext_noop(
    "Your message could not be saved: nothing was sent. Try again."
)


# What a turn begins from.


@dataclass(frozen=True)
class Question:
    """A question sent in a conversation, with its attachments' ids (and
    whether documents may be truncated to fit)."""

    conversation_id: int
    content: str
    client_id: str = ""
    attachments: tuple[str, ...] = ()
    truncate_documents: bool = False

    def prepare(self) -> Pending:
        asked = turn_rows.Asked(
            self.content, self.client_id, self.attachments, self.truncate_documents
        )
        return turn_rows.prepare_turn_of(self.conversation_id, asked)


@dataclass(frozen=True)
class Regenerate:
    """A shown answer's question asked again (the last one's by default)."""

    conversation_id: int
    answer_id: int | None = None

    def prepare(self) -> Pending:
        conversation = Conversation.objects.get(pk=self.conversation_id)
        return turn_rows.prepare_regenerate(conversation, self.answer_id)


@dataclass(frozen=True)
class Edit:
    """A shown question asked again with new text (and new files, if given)."""

    conversation_id: int
    message_id: int
    content: str
    attachments: tuple[str, ...] | None = None
    truncate_documents: bool = False

    def prepare(self) -> Pending:
        conversation = Conversation.objects.get(pk=self.conversation_id)
        return turn_rows.prepare_edit(
            conversation,
            self.message_id,
            self.content,
            attachments=self.attachments,
            truncate_documents=self.truncate_documents,
        )


@dataclass(frozen=True)
class ApiQuestion:
    """An answer asked over the API of the model named `model`, in a
    conversation of its own (new: it has no id yet), kept in the owner's list
    when `store`; `think` and `options` as the request asked (None: the
    model's default); `tools`, the client's own, which it runs itself
    (`turn_rows.ClientTools`: offered to the model, never run here)."""

    api_key: ApiKey
    model: str
    messages: list[dict[str, Any]]
    think: bool | None
    options: dict[str, Any]
    store: bool
    tools: ClientTools | None = None

    def resolved(self) -> Callable[[], Pending]:
        """Its model and what it is asked with, found before the transaction;
        refused with `ModelProfile.DoesNotExist` or ModelForbidden."""
        profile = turn_rows.api_profile(self.api_key, self.model)
        if self.think is None:
            think = profile.think_flag(ThinkingMode.DEFAULT)
        else:  # a model that cannot think is not asked to (never a 400 for it)
            think = self.think if profile.supports_thinking else None
        options = profile.request_options(think)
        options.update(self.options)
        return partial(
            turn_rows.prepare_api_turn,
            self.api_key,
            profile,
            self.messages,
            think=think,
            store=self.store,
            options=options,
            tools=self.tools,
        )


Ask = Question | Regenerate | Edit | ApiQuestion


# What comes back.


@dataclass(frozen=True)
class Refused:
    """A turn not begun: nothing of it is stored. `resets_at`: when a quota
    lets the user ask again; `content`: the question's text, given back when
    the turn was shown before its commit failed (else None)."""

    code: str
    detail: str
    resets_at: datetime | None = None
    content: str | None = None

    @classmethod
    def of(cls, exc: Exception) -> Refused:
        resets_at = exc.resets_at if isinstance(exc, QuotaReached) else None
        return cls(REFUSALS[type(exc)], str(exc), resets_at)


@dataclass(frozen=True)
class Started:
    """A turn begun: stored (or being committed, its answer asked already),
    its generation running; `sink`, the caller's reader of it, if it gave one."""

    turn: Turn
    generation: Generation
    sink: Sink | None = None


class _Stored(NamedTuple):
    begun: Turn | Retry
    plan: admission.Plan


class Stored(_Stored):
    """A turn committed (`store`'s result), a retry's with what it replaced,
    and its answer's first admission decision (unpacked as those two); and a
    turn with tools' steps (`steps`, set after)."""

    steps: Steps | None = None

    @property
    def turn(self) -> Turn:
        return self.begun.turn if isinstance(self.begun, Retry) else self.begun


@dataclass(frozen=True)
class Admitted:
    """A turn whose answer may be asked for now, before its commit: its rows
    are not written yet (the answer has no id until `store` returns, and the
    plan knows it as `admission.UNSTORED`)."""

    turn: Turn
    plan: admission.Plan
    steps: Steps | None = None  # a turn with tools


async def begin(
    ask: Ask, sink_of: Callable[[Turn], Sink] | None = None
) -> Started | Refused:
    """Begin the turn `ask` and hand its answer to the runner. `sink_of` gives
    the caller's reader of the answer, subscribed before it starts (the API's
    response; a socket is subscribed already)."""
    conversation_id = None if isinstance(ask, ApiQuestion) else ask.conversation_id
    if conversation_id is not None and not runner.claim(conversation_id):
        return Refused(
            code="busy", detail=_("Wait for the current answer, or stop it.")
        )
    # A sent question without files is shown before its commit. (One with
    # files is not: the page would have its files back in the composer only
    # if nothing was shown, `static/chat/turn.js`.)
    shown = early.Shown() if isinstance(ask, Question) and not ask.attachments else None
    try:
        stored, admitted, asked = await early.store(partial(store, ask, shown=shown))
        if admitted is None:  # waiting for a slot (or refused, or failed)
            begun = stored.result()
    except tuple(REFUSALS) as exc:
        _release(conversation_id)
        return Refused.of(exc)
    except DatabaseError:
        # Nothing was stored (one transaction): say so, and the page gives
        # the text back to the composer.
        logger.exception("a turn was not stored (conversation %s)", conversation_id)
        _release(conversation_id)
        return Refused(code="not_stored", detail=_(NOT_STORED))
    except BaseException:
        _release(conversation_id)
        raise
    turn = begun.turn if admitted is None else admitted.turn
    # What the viewers are told of the turn (an API turn's conversation is
    # new: it has none).
    told_of_stored = _nothing if conversation_id is None else _told
    if conversation_id is None:
        # A conversation of its own, new: nobody else can hold its claim.
        claimed = runner.claim(turn.answer.conversation_id)
        assert claimed, "a new conversation was claimed already"
    sink = None if sink_of is None else sink_of(turn)
    if sink is not None:
        runner.subscribe(turn.answer.conversation_id, sink)
    if admitted is None:
        # The stored turn goes to the runner at once (no await before it): its
        # task tells the viewers, so nothing can leave the conversation claimed.
        starting = runner.start(
            turn.profile,
            turn.answer,
            turn.history,
            turn.options,
            told=told_of_stored(begun),
            plan=begun.plan,
            steps=begun.steps,
        )
    else:
        # Admitted before the commit: the model server is asked now.
        committed = early.told(stored, told_of_stored, asked, shown)
        starting = runner.start(
            turn.profile,
            turn.answer,
            turn.history,
            turn.options,
            plan=admitted.plan,
            stored=committed,
            steps=admitted.steps,
        )
    try:
        if conversation_id is None:
            # Started from a context of its own: an HTTP request's holds
            # Django's per-request executor for `sync_to_async`, which quits
            # when the response ends, and the answer's task (and the runner's,
            # if this starts them) would inherit it and outlive it.
            task = asyncio.create_task(starting, context=contextvars.Context())
            generation = await task
        else:
            generation = await starting
    except BaseException:
        if sink is not None:
            runner.stop(turn.answer.conversation_id)
            runner.unsubscribe(turn.answer.conversation_id, sink)
        raise
    # Started: told, or the commit failed (`Runner.start` returns then; or its
    # task never ran, its loop closing).
    failed = stored.exception() if admitted is not None and stored.done() else None
    if failed is not None:
        # The runner closed the upstream request and took back what was told.
        logger.error(
            "a turn was not stored (conversation %s)",
            turn.answer.conversation_id,
            exc_info=failed,
        )
        if sink is not None:
            runner.unsubscribe(turn.answer.conversation_id, sink)
        # Its text too: the question may have been shown, and echoed, before.
        content = ask.content if isinstance(ask, Question) else ""
        return Refused(code="not_stored", detail=_(NOT_STORED), content=content)
    return Started(turn, generation, sink)


def _release(conversation_id: int | None) -> None:
    if conversation_id is not None:
        runner.release(conversation_id)


def _told(stored: Stored) -> list[frames.ServerFrame]:
    return told_of(stored.begun)


def _nothing(stored: Stored) -> list[frames.ServerFrame]:
    return []


def store(
    ask: Ask,
    admitted: Callable[[Admitted], None] | None = None,
    *,
    shown: early.Shown | None = None,
) -> Stored:
    """Store the turn and take its answer's place in line, in one commit
    (sync: in the database thread). `admitted` is called (from this thread)
    once the answer holds a slot, before its rows are written; `shown`, once an
    admitted turn's rows are written, before the commit."""
    prepare = ask.resolved() if isinstance(ask, ApiQuestion) else ask.prepare
    with transaction.atomic():
        # The site's row first: the lock order (chat.models.admission). A
        # question's first trip reads it with the conversation; nothing a
        # retry writes before its answer is placed changes the line.
        line = None if isinstance(ask, Question) else Line.read()[0]
        pending = prepare()
        turn = pending.turn
        asked = False  # the model server is being asked
        steps = _tools(turn, pending, api=isinstance(ask, ApiQuestion))

        def go(plan: admission.Plan) -> None:
            nonlocal asked
            if admitted is not None:
                asked = True
                admitted(Admitted(turn, plan, steps))

        write_ticket = admission.place(
            turn.profile, pending.owner_id, go, pending.line or line
        )
        pending.write()
        if asked and shown is not None:
            shown.set(turn_frames(turn), taken_back(turn))
        plan = write_ticket(turn.answer)
        begun = pending.close()
    stored = Stored(begun, plan)
    stored.steps = steps
    return stored


def _tools(turn: Turn, pending: Pending, *, api: bool) -> Steps | None:
    """The steps of a turn with tools; None for an answer of one model call.
    An API turn has the client's own tools, if it offers some (the site's
    are for its own conversations): `Steps.for_client`; a turn of the
    site's has the tools its conversation switched on (`offer`)."""
    if api:
        client = turn.client_tools
        return None if client is None else Steps.for_client(client, pending.owner_id)
    return offer.steps_for(turn, pending)


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
