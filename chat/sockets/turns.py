"""A turn begins: its messages are stored and its answer placed in line, in one
commit, before the runner is given it (`chat.sockets.consumers`). Sync: run in the
database thread.

Behind the model methods (`Conversation.begin_turn` and the retries) because
taking a ticket is the queue's (`chat.live.admission`), which the models may not
import (`tests/test_layers.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from chat.live import admission
from chat.models import Conversation, Retry, Turn


def begin(
    conversation_id: int,
    content: str,
    client_id: str,
    files: tuple[list[str], bool] = ([], False),
) -> tuple[Turn, admission.Plan]:
    """Store a sent question (with its attachments: their ids, and whether
    documents may be truncated) and its answer's placeholder, and take the
    answer's place in line (`chat.live.admission`), in one commit."""
    conversation = Conversation.objects.select_related("model_profile").get(
        pk=conversation_id
    )
    # One commit for the question, the answer's placeholder and its place in line.
    with transaction.atomic():
        turn = conversation.begin_turn(
            content, client_id, attachments=files[0], truncate_documents=files[1]
        )
        plan = admission.take_ticket(turn.answer, turn.profile, conversation.owner_id)
    return turn, plan


def begin_retry(
    conversation_id: int, begin: Callable[[Conversation], Retry]
) -> tuple[Retry, admission.Plan]:
    """The same for a regenerate or an edit (`begin`: the conversation's method
    that replaces the last question and answer)."""
    conversation = Conversation.objects.get(pk=conversation_id)
    with transaction.atomic():
        retry = begin(conversation)
        turn = retry.turn
        plan = admission.take_ticket(turn.answer, turn.profile, conversation.owner_id)
    return retry, plan
