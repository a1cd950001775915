"""Regenerates, edits and version switches: a new version of a shown turn, or
another one shown in its place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.models.attachments import Attachment
from chat.models.conversations import Conversation, VersionSwitch
from chat.models.messages import Message
from chat.models.turn_rows.rows import (
    Asked,
    Pending,
    Retry,
    lock_when_idle,
    prepare_turn,
)
from chat.models.versions import branch_below

if TYPE_CHECKING:
    pass


# Regenerates and edits: a new version of a shown turn.


@transaction.atomic
def begin_regenerate(conversation: Conversation, answer_id: int | None = None) -> Retry:
    """`prepare_regenerate`, written."""
    retry: Retry = prepare_regenerate(conversation, answer_id).done()
    return retry


def prepare_regenerate(
    conversation: Conversation, answer_id: int | None = None
) -> Pending:
    """Ask a shown answer's question again (the last one's by default): the
    question, its answer and everything after them leave the shown branch
    (kept: `replaced`), and a new version of the turn begins beside them,
    so what was replaced is not in the history sent to the model."""
    _check_before_retry(conversation)
    if answer_id is None:
        question = conversation.messages.filter(role=Message.Role.USER).last()
    else:
        answer = conversation.messages.filter(
            pk=answer_id, role=Message.Role.ASSISTANT
        ).first()
        question = answer.parent if answer is not None else None
        if question is None or question.role != Message.Role.USER:
            raise Conversation.NothingToRegenerate(
                _("That answer is not one of this conversation's to regenerate.")
            )
    if question is None:
        raise Conversation.NothingToRegenerate(
            _("There is no answer to regenerate yet.")
        )
    return _retry(conversation, question, question.content)


@transaction.atomic
def begin_edit(
    conversation: Conversation,
    message_id: int,
    content: str,
    *,
    attachments: Sequence[str] | None = None,
    truncate_documents: bool = False,
) -> Retry:
    """`prepare_edit`, written."""
    retry: Retry = prepare_edit(
        conversation,
        message_id,
        content,
        attachments=attachments,
        truncate_documents=truncate_documents,
    ).done()
    return retry


def prepare_edit(
    conversation: Conversation,
    message_id: int,
    content: str,
    *,
    attachments: Sequence[str] | None = None,
    truncate_documents: bool = False,
) -> Pending:
    """Ask a shown question again with new text: a new version of its turn,
    the old one and what followed it kept on their own branch. It keeps
    its files unless `attachments` (new uploads' ids) replace them."""
    _check_before_retry(conversation)
    question = conversation.messages.filter(
        pk=message_id, role=Message.Role.USER
    ).first()
    if question is None:
        raise Conversation.NotAQuestion(
            _("Only your own questions in this conversation can be edited.")
        )
    return _retry(
        conversation,
        question,
        content,
        attachments=attachments,
        truncate_documents=truncate_documents,
    )


def _check_before_retry(conversation: Conversation) -> None:
    # The model first, so a missing one changes nothing; then the lock.
    conversation.model_for_next_answer()
    lock_when_idle(conversation)


def _retry(
    conversation: Conversation,
    question: Message,
    content: str,
    *,
    attachments: Sequence[str] | None = None,
    truncate_documents: bool = False,
) -> Pending:
    """The question and everything after it on the shown branch make way
    for a new version of its turn: they are kept, marked replaced, so if
    the new answer fails nothing is lost, and they stay reachable with the
    turn's version control (`show_version`). The new question follows the
    old one's parent: after the others leave, it is the branch's last."""
    hidden = conversation.messages.filter(pk__gte=question.pk)
    removed = sorted(hidden.values_list("pk", flat=True))
    hidden.update(replaced=True)
    if attachments is None:
        # The new version asks with the same files (rows of its own that
        # share the stored files).
        asked = Asked(content, question.client_id, files_of=question)
    else:
        asked = Asked(content, question.client_id, attachments, truncate_documents)
    pending = prepare_turn(conversation, asked)
    pending.removed = removed
    return pending


@transaction.atomic
def show_version(conversation: Conversation, question_id: int) -> VersionSwitch:
    """Show another version of a shown turn: the shown version and
    everything below it leave the shown branch (kept), and the chosen
    question comes back with the branch last viewed below it (the newest
    one if it was never left)."""
    lock_when_idle(conversation)
    chosen = Message.objects.filter(
        conversation=conversation, pk=question_id, role=Message.Role.USER
    ).first()
    shown = None
    if chosen is not None:
        shown = conversation.messages.filter(
            role=Message.Role.USER, parent_id=chosen.parent_id
        ).first()
    if chosen is None or shown is None:
        raise Conversation.NotAVersion(
            _("That is not a version of a question shown in this conversation.")
        )
    removed: list[int] = []
    if shown.pk != chosen.pk:
        hidden = conversation.messages.filter(pk__gte=shown.pk)
        removed = sorted(hidden.values_list("pk", flat=True))
        hidden.update(replaced=True)
        below = Message.objects.filter(conversation=conversation, pk__gt=chosen.pk)
        path = branch_below(chosen.pk, below.values_list("pk", "parent_id", "shown_at"))
        Message.objects.filter(pk__in=path).update(
            replaced=False, shown_at=timezone.now()
        )
    chosen_branch = conversation.messages.filter(pk__gte=chosen.pk).order_by("pk")
    messages = list(chosen_branch.prefetch_related("attachments"))
    conversation.place_answers(messages)
    Attachment.count_for_answers(messages)
    return VersionSwitch(removed, messages)
