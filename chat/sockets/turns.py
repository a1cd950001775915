"""A turn begins: its messages are stored and its answer placed in line, in one
commit (`chat.sockets.consumers`). Sync: run in the database thread.

The model server is asked first (docs/latency.md, rule 8): the answer's place
in line is decided before its rows are written, and the moment it is admitted
`begin` hands it to the event loop (`admitted`), which sends the upstream
request while this thread writes the question, the answer, its ticket and the
conversation's row and commits. The site's row stays locked until then
(`admission.take_ticket`), so the decision is as global as before; a commit
that fails after the request went out closes it (`Runner.start`, `stored`). A
sent question without files is also shown before the commit, once its rows are
written (`shown`): a commit that fails after that takes it back
(`Runner._ask_while_storing`).

Behind the model methods (`Conversation.begin_turn_of` and the retries) because
taking a ticket is the queue's (`chat.live.admission`), which the models may not
import (`tests/test_layers.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from django.db import transaction

from chat.live import admission
from chat.models import Conversation, Placed, Retry, Turn
from chat.models.admission import Line


class Admitted(NamedTuple):
    """A turn whose answer may be asked for now, before its commit: its rows
    are not written yet (the answer has no id until `begin` returns, and the
    plan knows it as `admission.UNSTORED`)."""

    turn: Turn
    plan: admission.Plan


def begin(
    conversation_id: int,
    content: str,
    client_id: str,
    files: tuple[list[str], bool] = ([], False),
    admitted: Callable[[Admitted], None] | None = None,
    *,
    shown: Callable[[Turn], None] | None = None,
) -> tuple[Turn, admission.Plan]:
    """Store a sent question (with its attachments: their ids, and whether
    documents may be truncated) and its answer's placeholder, and take the
    answer's place in line (`chat.live.admission`), in one commit. `admitted`
    is called (from this thread) once the answer holds a slot, before the
    commit; then `shown`, once an admitted question without files and its
    answer are written, before the commit. (A question with files is not: the
    page would have its files back in the composer only if nothing was shown,
    `static/chat/turn.js`.)"""
    plans: list[admission.Plan] = []
    turn = Conversation.begin_turn_of(
        conversation_id,
        content,
        client_id,
        attachments=files[0],
        truncate_documents=files[1],
        placed=_placer(plans, admitted, None if files[0] else shown),
    )
    return turn, plans[0]


# A regenerate or an edit: the conversation's method that replaces the last
# question and answer, given where to place the new answer.
Retrying = Callable[[Conversation, Placed], Retry]


def begin_retry(
    conversation_id: int,
    begin: Retrying,
    admitted: Callable[[Admitted], None] | None = None,
) -> tuple[Retry, admission.Plan]:
    """The same for a regenerate or an edit."""
    plans: list[admission.Plan] = []
    conversation = Conversation.objects.get(pk=conversation_id)
    with transaction.atomic():
        # The site's row first: the lock order (chat.models.admission). Nothing
        # the retry writes before its answer is placed changes the line.
        line, _ = Line.read()
        retry = begin(conversation, _placer(plans, admitted, line=line))
    return retry, plans[0]


def _placer(
    plans: list[admission.Plan],
    admitted: Callable[[Admitted], None] | None,
    shown: Callable[[Turn], None] | None = None,
    *,
    line: Line | None = None,
) -> Placed:
    """The turn's answer's place in line (`Conversation.begin_turn_of`): its
    decision is added to `plans` once its ticket is written. An admitted turn
    is `shown` once its rows are written, before its ticket. `line`: what the
    transaction read first, when the turn's own first trip did not."""

    def placed(turn: Turn, read: Line | None) -> Callable[[], None]:
        asked = False  # the model server is being asked

        def go(plan: admission.Plan) -> None:
            nonlocal asked
            if admitted is not None:
                asked = True
                admitted(Admitted(turn, plan))

        owner_id = turn.question.conversation.owner_id
        write = admission.place(turn.profile, owner_id, go, read or line)

        def then() -> None:
            if asked and shown is not None:
                shown(turn)
            plans.append(write(turn.answer))

        return then

    return placed
