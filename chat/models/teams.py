"""Teams: people who read each other's shared conversations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models, transaction

from chat.models.conversations import Conversation
from chat.models.messages import Message

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User


class TeamQuerySet(models.QuerySet["Team"]):
    def of(self, user: User | AnonymousUser) -> TeamQuerySet:
        """The teams `user` is a member of."""
        return self.filter(members__pk=user.pk or 0)


class Team(models.Model):
    """Members read the conversations shared with the team (read-only) and may
    continue any of them in a copy of their own. Managed in the admin."""

    name = models.CharField(max_length=100, unique=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="teams", blank=True
    )
    conversations = models.ManyToManyField(
        Conversation, related_name="shared_with_teams", blank=True
    )

    objects = TeamQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def team_conversations(
    user: User | AnonymousUser,
) -> models.QuerySet[Conversation]:
    """Other people's conversations shared with one of `user`'s teams, whose owner
    is still on that team."""
    teams = Team.objects.of(user)
    return (
        Conversation.objects.filter(
            shared_with_teams__in=teams,
            shared_with_teams__members=models.F("owner"),
        )
        .exclude(owner_id=user.pk)
        .select_related("owner", "model_profile")
        .distinct()
    )


@transaction.atomic
def copy_conversation(
    source: Conversation, owner: User, *, include_thinking: bool
) -> Conversation:
    """A new conversation of `owner`'s with `source`'s finished messages: their
    answer text, and their thinking only where the reader was shown it."""
    copy = Conversation.objects.create(
        owner=owner,
        title=source.title_from(f"{source.display_title} (copy)"),
        model_profile=source.model_profile,
        thinking=source.thinking,
        system_prompt=source.system_prompt,
        history_policy=source.history_policy,
        history_last_n=source.history_last_n,
        temperature=source.temperature,
    )
    finished = source.messages.exclude(status=Message.Status.STREAMING).order_by("pk")
    Message.objects.bulk_create(
        Message(
            conversation=copy,
            role=message.role,
            content=message.content,
            thinking=message.thinking if include_thinking else "",
            status=message.status,
            error_code=message.error_code,
            error_detail=message.error_detail,
            model_tag=message.model_tag,
            thinking_enabled=message.thinking_enabled,
        )
        for message in finished
    )
    return copy
