"""What a person keeps with their account, and how a new one joins."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import models, transaction
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

from chat.models.audit import AuditEvent
from chat.models.profiles import ModelProfile
from chat.models.teams import Membership, Team

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class Theme(models.TextChoices):
    SYSTEM = "system", _("As the system")
    LIGHT = "light", _("Light")
    DARK = "dark", _("Dark")


class Language(models.TextChoices):
    """The interface's language (settings.LANGUAGES); blank follows the
    browser's Accept-Language. Each language is named in itself, so whoever
    cannot read the current one still finds theirs."""

    BROWSER = "", _("As the browser")
    EN = "en", "English"  # i18n: not text (named in itself)
    ZH_HANS = "zh-hans", "简体中文"  # i18n: not text (named in itself)


# Where a signed-in session keeps the user's language (chat.web.languages sets
# it; pages and sockets read it).
LANGUAGE_SESSION_KEY = "chat_language"


class UserSettings(models.Model):
    """One per user, made on first use (`for_user`)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="chat_settings",
        verbose_name=_("user"),
    )
    display_name = models.CharField(_("display name"), max_length=150, blank=True)
    theme = models.CharField(
        _("theme"), max_length=6, choices=Theme, default=Theme.SYSTEM
    )
    language = models.CharField(
        _("language"),
        max_length=7,
        choices=Language,
        default=Language.BROWSER,
        blank=True,
    )
    default_profile = models.ForeignKey(
        ModelProfile,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("New conversations start with this model. Blank: the site's."),
        verbose_name=_("default profile"),
    )

    class Meta:
        verbose_name = verbose_name_plural = _("user settings")

    def __str__(self) -> str:
        return f"settings of {self.user}"

    @classmethod
    def for_user(cls, user: models.Model) -> UserSettings:
        obj, _created = cls.objects.get_or_create(user_id=user.pk)
        return obj


WRONG_EMAIL = gettext_noop(
    "This invitation is for another email address. Enter the address it was sent to."
)


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class InvitationQuerySet(models.QuerySet["Invitation"]):
    def by_token(self, token: str) -> Invitation | None:
        """The invitation whose link holds `token`, used or not (the caller says
        why one cannot be used). An invitation of an existing account has no
        link (`pending_for`)."""
        return self.filter(token_hash=_token_hash(token), invitee=None).first()

    def pending_for(self, user: Any) -> InvitationQuerySet:
        """The team invitations `user` may still accept or decline."""
        return self.filter(
            invitee_id=user.pk, used_at=None, expires_at__gt=timezone.now()
        ).select_related("team", "created_by")


class Invitation(models.Model):
    """A single-use sign-up link. Only the token's hash is stored: the link is
    shown once, to whoever created it (`create_with_token`)."""

    DEFAULT_LIFETIME = timedelta(days=7)

    token_hash = models.CharField(
        max_length=64, unique=True, editable=False, verbose_name=_("token hash")
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="invitations_made",
        verbose_name=_("created by"),
    )
    email = models.EmailField(
        blank=True,
        help_text=_("Only this address may use it. Blank: anyone with the link."),
        verbose_name=_("email"),
    )
    team = models.ForeignKey(
        Team,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="invitations",
        help_text=_("The invitee joins this team."),
        verbose_name=_("team"),
    )
    # An existing account asked to join `team` (`Team.invite_member`): no link,
    # the person answers on their team page (`answer`). Blank: a sign-up link.
    invitee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="team_invitations",
        verbose_name=_("invitee"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    expires_at = models.DateTimeField(verbose_name=_("expires at"))
    used_at = models.DateTimeField(null=True, blank=True, verbose_name=_("used at"))
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("used by"),
    )

    objects = InvitationQuerySet.as_manager()

    class Meta:
        verbose_name = _("invitation")
        verbose_name_plural = _("invitations")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        whom = self.email or _("anyone with the link")
        if self.team:
            return _("invitation for %(whom)s to %(team)s") % {
                "whom": whom,
                "team": self.team,
            }
        return _("invitation for %(whom)s") % {"whom": whom}

    @classmethod
    def create_with_token(cls, **fields: object) -> tuple[Invitation, str]:
        """A new invitation and its token (the only time the token is known)."""
        fields.setdefault("expires_at", timezone.now() + cls.DEFAULT_LIFETIME)
        invitation = cls(**fields)
        token = invitation.issue_token()
        invitation.save()
        return invitation, token

    def issue_token(self) -> str:
        """A new token for this unsaved invitation (only its hash is kept)."""
        token = secrets.token_urlsafe(32)
        self.token_hash = _token_hash(token)
        return token

    @property
    def usable(self) -> bool:
        return self.used_at is None and self.expires_at > timezone.now()

    # ---- accepting (chat.web.invitations) --------------------------------

    class Unusable(Exception):
        """The invitation cannot be used; `str(exc)` is the message for the
        person, `code` one of "used", "expired", "email"."""

        def __init__(self, code: str, message: str) -> None:
            super().__init__(message)
            self.code = code

    def refusal(self) -> Invitation.Unusable | None:
        """Why the link cannot be used now (None: it can)."""
        if self.used_at is not None:
            return self.Unusable(
                "used",
                gettext(
                    "This invitation has already been used. An invitation makes "
                    "one account; ask whoever invited you for a new link."
                ),
            )
        if self.expires_at <= timezone.now():
            return self.Unusable(
                "expired",
                _(
                    "This invitation expired on %(when)s UTC. Ask whoever invited "
                    "you for a new link."
                )
                % {"when": date_format(self.expires_at, "DATETIME_FORMAT")},
            )
        return None

    def email_matches(self, email: str) -> bool:
        return not self.email or email.strip().casefold() == self.email.casefold()

    def accept(
        self, *, username: str, email: str, password: str, address: str = ""
    ) -> User:
        """The new account the invitation makes, on its team, the invitation
        spent: all in one transaction, so a refusal or a failure at any step
        leaves neither an account nor a spent invitation. The row is locked
        first: of two people sending the same link at once, the second waits
        and then finds it used (`tests/web/teams/test_invitations.py`)."""
        with transaction.atomic():
            locked = Invitation.objects.select_for_update().get(pk=self.pk)
            refusal = locked.refusal()
            if refusal is not None:
                raise refusal
            if not locked.email_matches(email):
                raise self.Unusable("email", gettext(WRONG_EMAIL))
            users = get_user_model()._default_manager
            user = users.create_user(
                username=username, email=email.strip(), password=password
            )
            if locked.team_id is not None:
                Membership.objects.get_or_create(team_id=locked.team_id, user=user)
            locked.used_at = timezone.now()
            locked.used_by = user
            locked.save(update_fields=["used_at", "used_by"])
            AuditEvent.record(
                AuditEvent.Kind.ACCOUNT_CREATED,
                subject=user,
                address=address,
                method="invitation",
            )
            AuditEvent.record(
                AuditEvent.Kind.INVITATION_USED,
                actor=user,
                subject=user,
                address=address,
                method="invitation",
                invitation=locked.pk,
                team=locked.team.name if locked.team else None,
                invited_by=locked.created_by.get_username()
                if locked.created_by
                else None,
            )
        self.used_at, self.used_by = locked.used_at, user
        return user

    def answer(self, user: Any, *, join: bool, address: str = "") -> bool:
        """`user`, the invitee, joins the team (`join`) or declines; the
        invitation is spent either way. False: it was not theirs to answer, or
        no longer usable (answered in another tab, expired)."""
        with transaction.atomic():
            locked = (
                Invitation.objects.select_for_update()
                .filter(pk=self.pk, invitee_id=user.pk, team__isnull=False)
                .first()
            )
            if locked is None or locked.team is None or not locked.usable:
                return False
            team = locked.team
            locked.used_at, locked.used_by = timezone.now(), user
            locked.save(update_fields=["used_at", "used_by"])
            if not join:
                return True
            _membership, created = Membership.objects.get_or_create(
                team=team, user=user
            )
            if created:
                AuditEvent.record(
                    AuditEvent.Kind.MEMBERSHIP_CHANGED,
                    actor=user,
                    subject=user,
                    address=address,
                    method="invitation",
                    team=team.name,
                    team_id=team.pk,
                    joined=True,
                    invited_by=locked.created_by.get_username()
                    if locked.created_by
                    else None,
                )
        return True


class ExternalAccount(models.Model):
    """The provider identity an account signs in with: an OpenID Connect
    issuer's `sub`, or an LDAP entry's username. Found by this, not by email or
    username, so a provider's user can never take over a local account that
    happens to share a name (`chat.accounts.provisioning`)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="external_accounts",
        verbose_name=_("user"),
    )
    method = models.CharField(
        max_length=10, verbose_name=_("method")
    )  # "oidc" or "ldap"
    subject = models.CharField(max_length=255, verbose_name=_("subject"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    last_sign_in = models.DateTimeField(
        null=True, blank=True, verbose_name=_("last sign in")
    )

    class Meta:
        verbose_name = _("external account")
        verbose_name_plural = _("external accounts")
        constraints = [
            models.UniqueConstraint(
                fields=["method", "subject"], name="one_account_per_identity"
            )
        ]

    def __str__(self) -> str:
        return f"{self.method}:{self.subject} → {self.user}"
