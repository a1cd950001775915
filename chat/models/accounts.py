"""What a person keeps with their account, and how a new one joins."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from chat.models.profiles import ModelProfile
from chat.models.teams import Team


class Theme(models.TextChoices):
    SYSTEM = "system", "As the system"
    LIGHT = "light", "Light"
    DARK = "dark", "Dark"


class UserSettings(models.Model):
    """One per user, made on first use (`for_user`)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_settings"
    )
    display_name = models.CharField(max_length=150, blank=True)
    theme = models.CharField(max_length=6, choices=Theme, default=Theme.SYSTEM)
    default_profile = models.ForeignKey(
        ModelProfile,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="New conversations start with this model. Blank: the site's.",
    )

    class Meta:
        verbose_name = verbose_name_plural = "user settings"

    def __str__(self) -> str:
        return f"settings of {self.user}"

    @classmethod
    def for_user(cls, user: models.Model) -> UserSettings:
        obj, _ = cls.objects.get_or_create(user_id=user.pk)
        return obj


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class InvitationQuerySet(models.QuerySet["Invitation"]):
    def by_token(self, token: str) -> Invitation | None:
        """The invitation whose link holds `token`, used or not (the caller says
        why one cannot be used)."""
        return self.filter(token_hash=_token_hash(token)).first()


class Invitation(models.Model):
    """A single-use sign-up link. Only the token's hash is stored: the link is
    shown once, to whoever created it (`create_with_token`)."""

    DEFAULT_LIFETIME = timedelta(days=7)

    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="invitations_made",
    )
    email = models.EmailField(
        blank=True,
        help_text="Only this address may use it. Blank: anyone with the link.",
    )
    team = models.ForeignKey(
        Team,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="invitations",
        help_text="The invitee joins this team.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    objects = InvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        whom = self.email or "anyone with the link"
        return f"invitation for {whom}" + (f" to {self.team}" if self.team else "")

    @classmethod
    def create_with_token(cls, **fields: object) -> tuple[Invitation, str]:
        """A new invitation and its token (the only time the token is known)."""
        token = secrets.token_urlsafe(32)
        fields.setdefault("expires_at", timezone.now() + cls.DEFAULT_LIFETIME)
        invitation = cls.objects.create(token_hash=_token_hash(token), **fields)
        return invitation, token

    @property
    def usable(self) -> bool:
        return self.used_at is None and self.expires_at > timezone.now()


class ExternalAccount(models.Model):
    """The provider identity an account signs in with: an OpenID Connect
    issuer's `sub`, or an LDAP entry's username. Found by this, not by email or
    username, so a provider's user can never take over a local account that
    happens to share a name (`chat.accounts.provisioning`)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="external_accounts",
    )
    method = models.CharField(max_length=10)  # "oidc" or "ldap"
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["method", "subject"], name="one_account_per_identity"
            )
        ]

    def __str__(self) -> str:
        return f"{self.method}:{self.subject} → {self.user}"
