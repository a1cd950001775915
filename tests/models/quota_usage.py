"""What the quota tests share: a user's conversation, an answer stored at a
given time (its question too), the site's limits set. Their model is the
`profile` fixture of tests/models/conftest.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chat.models import Conversation, Message, SiteDefaults

NOW = datetime(2026, 3, 14, 15, 9, tzinfo=UTC)
DAY = timedelta(days=1)


def conversation_of(user, profile) -> Conversation:
    return Conversation.objects.create(owner=user, model_profile=profile)


def answered(
    conversation: Conversation,
    *,
    tokens: int = 0,
    content: str = "an answer",
    status: str = Message.Status.DONE,
    at: datetime = NOW,
) -> Message:
    """A stored answer asked at `at` (its question too)."""
    conversation.messages.create(role=Message.Role.USER, content="a question")
    answer = conversation.messages.create(
        role=Message.Role.ASSISTANT,
        content=content,
        status=status,
        output_tokens=tokens,
    )
    Message.objects.filter(pk=answer.pk).update(created_at=at)
    return answer


def site_limits(**fields) -> None:
    site = SiteDefaults.load()
    for name, value in fields.items():
        setattr(site, name, value)
    site.save()
