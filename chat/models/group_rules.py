"""Sign-in group rules: a provider's group (an OpenID Connect claim, an LDAP
group) makes its members members of a team, or staff. Applied at every sign-in
through a provider (`GroupRule.apply`), so a group taken away at the provider
takes the membership or the role away at the next sign-in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import models, transaction
from django.utils.translation import gettext_lazy as _

from chat.models.teams import Membership, Team

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class Source(models.TextChoices):
    ANY = "any", _("Any provider")
    OIDC = "oidc", "OpenID Connect"  # i18n: not text (a name)
    LDAP = "ldap", "LDAP"


@dataclass
class Applied:
    """What one sign-in's groups changed (for the audit log)."""

    joined: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    staff: tuple[bool, bool] | None = None  # (before, after) when it changed

    @property
    def changed(self) -> bool:
        return bool(self.joined or self.left or self.staff)


class GroupRule(models.Model):
    """ "Group `gpu-users` → team GPU", "group `chat-admins` → staff"."""

    group = models.CharField(
        max_length=500,
        help_text=_(
            "The group's name as the provider sends it (an OpenID Connect "
            "claim's value; an LDAP group's cn or its full DN). Compared exactly."
        ),
        verbose_name=_("group"),
    )
    source = models.CharField(
        max_length=4, choices=Source, default=Source.ANY, verbose_name=_("source")
    )
    team = models.ForeignKey(
        Team,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="group_rules",
        help_text=_("Members of the group are members of this team."),
        verbose_name=_("team"),
    )
    team_role = models.CharField(
        max_length=6,
        choices=Membership.Role,
        default=Membership.Role.MEMBER,
        verbose_name=_("team role"),
    )
    makes_staff = models.BooleanField(
        default=False,
        help_text=_("Members of the group are staff (admins)."),
        verbose_name=_("makes staff"),
    )

    class Meta:
        verbose_name = _("sign-in group rule")
        verbose_name_plural = _("sign-in group rules")
        ordering = ["group"]

    def __str__(self) -> str:
        then = [f"team {self.team}"] if self.team_id else []
        then += ["staff"] if self.makes_staff else []
        return f"group {self.group} → {', '.join(then) or 'nothing'}"

    @classmethod
    @transaction.atomic
    def apply(cls, user: User, groups: Iterable[str], source: str) -> Applied:
        """Make `user`'s synced memberships and staff role what `groups` map to.

        Memberships added by hand are left alone (`Membership.synced`); a synced
        one whose group is gone is removed. Staff comes and goes with the rules
        only when some rule makes staff (a site without such a rule keeps its
        staff as the admin set them); superusers are never demoted."""
        names = set(groups)
        rules = list(
            cls.objects.filter(source__in=[Source.ANY, source]).select_related("team")
        )
        matching = [rule for rule in rules if rule.group in names]
        wanted: dict[int, tuple[str, str]] = {}  # team id -> (role, team name)
        for rule in matching:
            if rule.team is not None:
                # The higher role wins when two groups map to one team.
                role, _source = wanted.get(rule.team.pk, (Membership.Role.MEMBER, ""))
                if rule.team_role == Membership.Role.ADMIN:
                    role = Membership.Role.ADMIN
                wanted[rule.team.pk] = (role, rule.team.name)
        applied = Applied()
        current = {
            m.team_id: m
            for m in Membership.objects.filter(user=user).select_related("team")
        }
        for team_id, (role, name) in wanted.items():
            membership = current.get(team_id)
            if membership is None:
                Membership.objects.create(
                    team_id=team_id, user=user, role=role, synced=True
                )
                applied.joined.append(name)
            elif membership.synced and membership.role != role:
                membership.role = role
                membership.save(update_fields=["role"])
        for team_id, membership in current.items():
            if membership.synced and team_id not in wanted:
                membership.delete()
                applied.left.append(membership.team.name)
        if any(rule.makes_staff for rule in rules) and not user.is_superuser:
            staff = any(rule.makes_staff for rule in matching)
            if staff != user.is_staff:
                applied.staff = (user.is_staff, staff)
                user.is_staff = staff
                user.save(update_fields=["is_staff"])
        return applied
