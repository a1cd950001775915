"""Teams: people who read each other's shared conversations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import models, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from chat.models.audit import AuditEvent
from chat.models.conversations import Conversation
from chat.models.messages import Message
from chat.models.quota_periods import QuotaPeriod

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User


class TeamQuerySet(models.QuerySet["Team"]):
    def of(self, user: User | AnonymousUser) -> TeamQuerySet:
        """The teams `user` is a member of."""
        return self.filter(members__pk=user.pk or 0)


class Team(models.Model):
    """Members read the conversations shared with the team (read-only) and may
    continue any of them in a copy of their own. Its team admins add and remove
    members on the team page; sign-in group rules add and remove members too
    (`chat.models.group_rules`). Model profiles may be limited to teams
    (`ModelProfile.teams`).

    Quotas (0: no limit), over `quota_period`, counted from the stored answers
    (`chat.models.quotas`): the whole team's, and each member's."""

    name = models.CharField(max_length=100, unique=True, verbose_name=_("name"))
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        related_name="teams",
        blank=True,
        through="Membership",
        verbose_name=_("members"),
    )
    quota_period = models.CharField(
        max_length=5,
        choices=QuotaPeriod,
        default=QuotaPeriod.DAY,
        verbose_name=_("quota period"),
    )
    team_output_tokens = models.PositiveIntegerField(
        default=0,
        help_text=_("Output tokens the whole team may use. 0: no limit."),
        verbose_name=_("team output tokens"),
    )
    team_answers = models.PositiveIntegerField(
        default=0,
        help_text=_("Answers the whole team may get. 0: no limit."),
        verbose_name=_("team answers"),
    )
    member_output_tokens = models.PositiveIntegerField(
        default=0,
        help_text=_("Output tokens each member may use. 0: no limit."),
        verbose_name=_("member output tokens"),
    )
    member_answers = models.PositiveIntegerField(
        default=0,
        help_text=_("Answers each member may get. 0: no limit."),
        verbose_name=_("member answers"),
    )
    conversations = models.ManyToManyField(
        Conversation,
        related_name="shared_with_teams",
        blank=True,
        verbose_name=_("conversations"),
    )

    objects = TeamQuerySet.as_manager()

    class Meta:
        verbose_name = _("team")
        verbose_name_plural = _("teams")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def admins(self) -> models.QuerySet[User]:
        return get_user_model().objects.filter(
            memberships__team=self, memberships__role=Membership.Role.ADMIN
        )

    # --- The team page's changes (chat.web.teams.manage), each audited ---

    class Refused(Exception):
        """A change the team page refuses; `str(exc)` says why, for the person."""

    def managed_by(self, user: User | AnonymousUser) -> bool:
        """Staff and the team's own admins manage it on the team page."""
        if not (user.is_authenticated and user.is_active):
            return False
        return (
            user.is_staff
            or self.memberships.filter(
                user_id=user.pk, role=Membership.Role.ADMIN
            ).exists()
        )

    @transaction.atomic
    def invite_member(self, username: str, *, by: User, address: str = "") -> Any:
        """Ask an existing account to join: the person accepts or declines on
        their team page (`Invitation.answer`). Nobody is put on a team, where
        its admins see their usage, without saying yes."""
        from chat.models.accounts import Invitation  # accounts imports teams

        username = username.strip()
        if not username:
            raise Team.Refused(_("Type the username of the person to add."))
        user = get_user_model()._default_manager.filter(username=username).first()
        if user is None:
            raise Team.Refused(
                _(
                    "No account is named “%(username)s”. Invite them with a link "
                    "instead."
                )
                % {"username": username}
            )
        if not user.is_active:
            raise Team.Refused(
                _("The account “%(username)s” is switched off.")
                % {"username": username}
            )
        # The team's row first: two admins inviting the same person at once
        # make one invitation.
        Team.objects.select_for_update().filter(pk=self.pk).first()
        if self.memberships.filter(user=user).exists():
            raise Team.Refused(
                _("“%(username)s” is already on this team.") % {"username": username}
            )
        if Invitation.objects.pending_for(user).filter(team=self).exists():
            raise Team.Refused(
                _("“%(username)s” is invited already and has not answered yet.")
                % {"username": username}
            )
        invitation, _token = Invitation.create_with_token(
            created_by=by, team=self, invitee=user
        )
        self._audit(
            AuditEvent.Kind.INVITATION_CREATED,
            by,
            user,
            address,
            invitation=invitation.pk,
            expires_at=invitation.expires_at.isoformat(),
        )
        return invitation

    @transaction.atomic
    def remove_member(
        self, membership: Membership, *, by: User, address: str = ""
    ) -> None:
        membership = self._locked(membership)
        self._refuse_synced(membership)
        if membership.role == Membership.Role.ADMIN:
            self._refuse_last_admin(membership, _("removed"))
        membership.delete()
        self._audit(
            AuditEvent.Kind.MEMBERSHIP_CHANGED, by, membership.user, address, left=True
        )

    @transaction.atomic
    def set_role(
        self, membership: Membership, role: str, *, by: User, address: str = ""
    ) -> None:
        if role not in Membership.Role.values:
            raise Team.Refused(_("Choose a role: member or team admin."))
        membership = self._locked(membership)
        if membership.role == role:
            return
        self._refuse_synced(membership)
        if membership.role == Membership.Role.ADMIN:
            self._refuse_last_admin(membership, _("made a plain member"))
        before, membership.role = membership.role, role
        membership.save(update_fields=["role"])
        self._audit(
            AuditEvent.Kind.ROLE_CHANGED,
            by,
            membership.user,
            address,
            role=[before, role],
        )

    def _locked(self, membership: Membership) -> Membership:
        # Two admins demoting each other at once must not leave none: the
        # team's row is the lock every change of its roles takes first.
        Team.objects.select_for_update().filter(pk=self.pk).first()
        fresh = (
            Membership.objects.select_related("user")
            .filter(pk=membership.pk, team=self)
            .first()
        )
        if fresh is None:
            raise Team.Refused(_("That person is no longer on this team."))
        return fresh

    @staticmethod
    def _refuse_synced(membership: Membership) -> None:
        if membership.synced:
            raise Team.Refused(
                _(
                    "“%(username)s” is on this team through a sign-in group rule: "
                    "change their groups at the identity provider, or the rule in "
                    "the admin."
                )
                % {"username": membership.user.get_username()}
            )

    def _refuse_last_admin(self, membership: Membership, change: Any) -> None:
        others = self.memberships.filter(role=Membership.Role.ADMIN).exclude(
            pk=membership.pk
        )
        if not others.exists():
            raise Team.Refused(
                _(
                    "The last admin of this team cannot be %(change)s: make "
                    "someone else a team admin first."
                )
                % {"change": change}
            )

    def _audit(
        self, kind: str, by: User, subject: User, address: str, **detail: Any
    ) -> None:
        AuditEvent.record(
            kind,
            actor=by,
            subject=subject,
            address=address,
            team=self.name,
            team_id=self.pk,
            via="team page",
            **detail,
        )


class Membership(models.Model):
    """One user on one team. The table is the one the plain many-to-many had
    (`chat_team_members`, migration 0008), so no membership was lost.

    `synced`: added by a sign-in group rule, so removed by the next sign-in whose
    groups no longer map to the team; memberships added by hand (admin, team
    page, invitation) are left alone by sign-ins."""

    class Role(models.TextChoices):
        MEMBER = "member", _("Member")
        ADMIN = "admin", _("Team admin")

    # The many-to-many's own column type (an int, not the app's big int).
    id = models.AutoField(primary_key=True, verbose_name=_("id"))
    team = models.ForeignKey(
        Team,
        on_delete=models.CASCADE,
        related_name="memberships",
        verbose_name=_("team"),
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="memberships",
        verbose_name=_("user"),
    )
    role = models.CharField(
        max_length=6, choices=Role, default=Role.MEMBER, verbose_name=_("role")
    )
    synced = models.BooleanField(
        default=False,
        help_text=_("Added by a sign-in group rule."),
        verbose_name=_("synced"),
    )
    # The team counts the member's answers from here (`chat.models.quotas`):
    # what they asked before joining is none of its admins' business. Blank
    # for memberships older than this column (migration 0020): all counted,
    # as before.
    joined_at = models.DateTimeField(
        null=True, blank=True, default=timezone.now, verbose_name=_("joined at")
    )

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        db_table = "chat_team_members"
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="one_membership")
        ]

    def __str__(self) -> str:
        return f"{self.user} on {self.team} ({self.get_role_display()})"


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
    """A new conversation of `owner`'s with `source`'s finished messages on its
    shown branch (one branch, the other versions left behind): their answer
    text, and their thinking only where the reader was shown it."""
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
    Message.objects.append_branch(
        [
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
        ]
    )
    return copy
