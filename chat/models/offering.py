"""What is offered to everyone or to chosen teams (model profiles, tool
servers): one access rule for both, on their `teams` many-to-many."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from django.db import models
from django.db.models import OuterRef

if TYPE_CHECKING:
    from typing import Self

    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

_Row = TypeVar("_Row", bound=models.Model)


class OfferedQuerySet(models.QuerySet[_Row]):
    """Rows with an `enabled` flag and a `teams` many-to-many (to `chat.Team`)."""

    def allowed_to(self, user_id: int | OuterRef) -> Self:
        """The rows the user `user_id` may use, enabled or not: the one access
        rule. A row limited to teams is for their members only; one with no
        teams is for everyone. `user_id` may be an `OuterRef` (a turn reads
        it with its conversation, `chat.models.turn_rows.TURN_READ`)."""
        open_to_all = models.Q(teams__isnull=True)
        their_team = models.Q(teams__memberships__user_id=user_id)
        return self.filter(open_to_all | their_team)

    def usable_by(self, user: AbstractBaseUser | AnonymousUser) -> Self:
        """The enabled rows `user` may choose (once each, however many of
        their teams a row is offered to)."""
        fresh = type(self)(model=self.model, using=self.db)
        allowed = fresh.allowed_to(user.pk or 0).values("pk")
        return self.filter(enabled=True, pk__in=allowed)
