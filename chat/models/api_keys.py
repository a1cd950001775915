"""Personal API keys: how scripts, editors and agents reach the model boxes
through chatsite (`chat.api`) under their owner's access, quotas and queue.

Only a key's SHA-256 is stored: a key is 256 random bits, so a fast hash is as
safe as a slow one, and it lets every request find its key with one indexed
query. That query runs on every request (nothing is cached), so a revoked key,
an expired one or a switched-off account is refused at once in every process.

A key is a credential made under its owner's password: a new password (set by
the owner, an admin or `manage.py changepassword`) and a switched-off account
revoke every key of theirs (`_revoke_keys_of_changed_accounts`), as they end
the owner's other sessions (`chat.sockets.session_sockets`). A switched-off
account's keys stay revoked when it is switched on again.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime
from ipaddress import ip_address
from typing import TYPE_CHECKING, Any, Final

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import models, transaction
from django.db.models.signals import post_save, pre_delete, pre_save
from django.dispatch import receiver
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from chat.models.audit import AuditEvent
from chat.models.profiles import ModelProfile
from chat.models.site import SiteDefaults
from chat.models.teams import Team

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# Every key starts with this: a leaked key is easy to recognise (and to scan for).
KEY_PREFIX = "csk-"
# How much of the key is kept in the clear, to tell one's keys apart.
SHOWN_CHARS = len(KEY_PREFIX) + 6
# A key is 47 characters; anything much longer is not one.
MAX_KEY_CHARS: Final = 200


# The default actor of `ApiKey.issue`: the key's owner made it themselves.
# (None is a real actor there: the system, e.g. `manage.py create_api_key`.)
OWNER: Final = object()


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _ip(address: str | None) -> str | None:
    """`address` written one way (None: none, or not an IP). Compared as
    written, one IPv6 address written two ways (the client's, the database's)
    would count as a new address on every request; and PostgreSQL's inet
    column refuses a non-IP."""
    try:
        return str(ip_address(address or ""))
    except ValueError:
        return None


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self) -> ApiKeyQuerySet:
        """Neither revoked nor expired."""
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).exclude(expires_at__lte=now)

    def in_state(self, state: str) -> ApiKeyQuerySet:
        """The keys whose `ApiKey.state` is `state` ("active", "expired",
        "revoked"; anything else: none)."""
        if state == "active":
            return self.active()
        if state == "expired":
            expired = models.Q(expires_at__lte=timezone.now())
            return self.filter(expired, revoked_at__isnull=True)
        if state == "revoked":
            return self.filter(revoked_at__isnull=False)
        return self.none()


class ApiKey(models.Model):
    class Refused(Exception):
        """The request's key cannot be used; `str(exc)` says why, for the
        client (never whether another user's key exists). `forbidden`: the key
        is good, but the site does not open the API to its owner."""

        def __init__(self, message: str, *, forbidden: bool = False) -> None:
            super().__init__(message)
            self.forbidden = forbidden

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="api_keys",
        verbose_name=_("user"),
    )
    name = models.CharField(max_length=100, verbose_name=_("name"))
    digest = models.CharField(
        max_length=64, unique=True, editable=False, verbose_name=_("digest")
    )
    shown = models.CharField(
        max_length=20, editable=False, verbose_name=_("shown")
    )  # "csk-Ab12Cd…"
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    expires_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("expires at")
    )
    revoked_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("revoked at")
    )
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("revoked by"),
    )
    last_used_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("last used at")
    )
    last_used_from = models.GenericIPAddressField(
        null=True, blank=True, verbose_name=_("last used from")
    )
    profiles = models.ManyToManyField(
        ModelProfile,
        blank=True,
        related_name="+",
        help_text=_("Only these models. None: every model the owner may use."),
        verbose_name=_("profiles"),
    )
    store_conversations = models.BooleanField(
        default=False,
        help_text=_(
            "Keep its answers as conversations in the owner's list (a "
            "request can also ask with the X-Chatsite-Store header)."
        ),
        verbose_name=_("store conversations"),
    )

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name_plural = _("API keys")
        ordering = ["-created_at"]
        verbose_name = _("API key")

    def __str__(self) -> str:
        return f"{self.name} ({self.shown}…)"

    # ---- issuing ---------------------------------------------------------

    @classmethod
    def issue(
        cls,
        user: AbstractBaseUser,
        name: str,
        *,
        expires_at: datetime | None = None,
        profiles: list[ModelProfile] | None = None,
        store_conversations: bool = False,
        actor: Any = OWNER,
        address: str = "",
        method: str = "",
    ) -> tuple[ApiKey, str]:
        """A new key for `user`, and the key itself (the only time it is known).
        `actor`: who made it (by default `user`; None: the system)."""
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        # One transaction: a key whose model restriction failed to be saved
        # would be a key to every model.
        with transaction.atomic():
            api_key = cls.objects.create(
                user=user,
                name=name.strip(),
                digest=key_digest(key),
                shown=key[:SHOWN_CHARS],
                expires_at=expires_at,
                store_conversations=store_conversations,
            )
            if profiles:
                api_key.profiles.set(profiles)
            AuditEvent.record(
                AuditEvent.Kind.API_KEY_CREATED,
                actor=user if actor is OWNER else actor,
                subject=user,
                address=address,
                method=method,
                key=api_key.name,
                shown=api_key.shown,
                expires_at=expires_at.isoformat() if expires_at else None,
                models=sorted(profile.tag for profile in profiles or ()),
                store_conversations=store_conversations,
            )
        return api_key, key

    def revoke(self, *, actor: Any = None, address: str = "", method: str = "") -> bool:
        """Revoke the key (False: it was already)."""
        now = timezone.now()
        changed = ApiKey.objects.filter(pk=self.pk, revoked_at__isnull=True).update(
            revoked_at=now, revoked_by=actor
        )
        if not changed:
            return False
        self.revoked_at, self.revoked_by = now, actor
        AuditEvent.record(
            AuditEvent.Kind.API_KEY_REVOKED,
            actor=actor,
            subject=self.user,
            address=address,
            method=method,
            key=self.name,
            shown=self.shown,
        )
        return True

    @property
    def state(self) -> str:
        """ "active", "expired" or "revoked", for the pages."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= timezone.now():
            return "expired"
        return "active"

    # ---- using -----------------------------------------------------------

    @classmethod
    def screen(cls, key: str) -> None:
        """Raise Refused for what cannot be a key (none, another scheme's, too
        long), with no database: a flood of junk costs no query."""
        if not key:
            raise cls.Refused(
                "No API key: send it as 'Authorization: Bearer <key>'. Create one "
                "on your account page."
            )
        if not key.startswith(KEY_PREFIX) or len(key) > MAX_KEY_CHARS:
            raise cls.Refused("That API key is not valid.")

    @classmethod
    def authenticate(cls, key: str, address: str = "") -> ApiKey:
        """The active key `key`, its user selected, its use noted; raises
        Refused with the reason."""
        cls.screen(key)
        api_key = (
            cls.objects.select_related("user").filter(digest=key_digest(key)).first()
        )
        if api_key is None:
            raise cls.Refused("That API key is not valid.")
        # First: switching an account off revokes its keys too, and this
        # says why.
        if not api_key.user.is_active:
            raise cls.Refused("The account of that API key is switched off.")
        if api_key.revoked_at is not None:
            raise cls.Refused("That API key was revoked.")
        now = timezone.now()
        if api_key.expires_at is not None and api_key.expires_at <= now:
            raise cls.Refused(
                f"That API key expired on {api_key.expires_at:%d %b %Y at %H:%M} UTC."
            )
        if not api_access_for(api_key.user):
            raise cls.Refused(
                "API access is not open to you on this site.", forbidden=True
            )
        # At most one write a minute per key and address: a busy script must
        # not turn every request into an UPDATE of the same row.
        last, ip = api_key.last_used_at, _ip(address)
        stale = last is None or (now - last).total_seconds() >= 60
        if stale or _ip(api_key.last_used_from) != ip:
            api_key.last_used_at, api_key.last_used_from = now, ip
            ApiKey.objects.filter(pk=api_key.pk).update(
                last_used_at=now, last_used_from=ip
            )
        return api_key

    def usable_profiles(self) -> models.QuerySet[ModelProfile]:
        """The models this key may ask: its owner's, narrowed to the key's own."""
        usable = ModelProfile.objects.usable_by(self.user)
        if self.profiles.exists():
            usable = usable.filter(pk__in=self.profiles.values("pk"))
        return usable.order_by("pk")

    def allows(self, profile: ModelProfile) -> bool:
        """Whether the key's own model restriction lets `profile` through (the
        owner's access is `usable_profiles`, or `ModelProfile.allowed_for`)."""
        restricted = self.profiles.all()
        return not restricted.exists() or restricted.filter(pk=profile.pk).exists()


def api_access_for(user: User | AbstractBaseUser) -> bool:
    """Whether the site lets `user` use the API (Site defaults: on or off, and
    optionally for some teams only)."""
    site = SiteDefaults.load()
    if not site.api_enabled:
        return False
    teams = site.api_teams.all()
    return not teams.exists() or Team.objects.of(user).filter(pk__in=teams).exists()  # type: ignore[arg-type]


@receiver(pre_delete, sender=ModelProfile)
def _revoke_keys_left_without_a_model(
    sender: type[ModelProfile], instance: ModelProfile, **kwargs: Any
) -> None:
    """A key restricted to the deleted profile alone is revoked: its
    restriction would otherwise empty, and an empty one means every model."""
    restricted = ApiKey.objects.active().filter(profiles=instance)
    for api_key in restricted:
        if api_key.profiles.exclude(pk=instance.pk).exists():
            continue
        api_key.revoke()


def revoke_all_of(
    user: Any, *, method: str, actor: Any = None, address: str = ""
) -> int:
    """Revoke every key of `user` still in force; how many were."""
    revoked = 0
    for api_key in ApiKey.objects.active().filter(user_id=user.pk):
        revoked += api_key.revoke(actor=actor, address=address, method=method)
    return revoked


# What `_credentials_changing` saw before a user's save, for `_revoke_...`.
_CHANGED = "_chat_credentials_changed"


@receiver(pre_save, sender=settings.AUTH_USER_MODEL)
def _credentials_changing(
    sender: Any, instance: Any, update_fields: Any = None, **kwargs: Any
) -> None:
    """Note whether this save gives the user a new password or switches them
    off. A new password is one set by `set_password` (Django keeps the raw one
    in `_password` until the save, `AbstractBaseUser.save`) or made unusable;
    a hash Django upgrades at sign-in (`check_password`'s setter) is the same
    password, and keeps the keys."""
    if instance.pk is None:
        return
    if update_fields is not None and not {"password", "is_active"} & set(update_fields):
        return
    before = (
        get_user_model()
        ._default_manager.filter(pk=instance.pk)
        .values("password", "is_active")
        .first()
    )
    if before is None:
        return
    new_password = before["password"] != instance.password and (
        getattr(instance, "_password", None) is not None
        or not instance.has_usable_password()
    )
    switched_off = before["is_active"] and not instance.is_active
    reason = "password" if new_password else "disabled" if switched_off else ""
    setattr(instance, _CHANGED, reason)


@receiver(post_save, sender=settings.AUTH_USER_MODEL)
def _revoke_keys_of_changed_accounts(
    sender: Any, instance: Any, created: bool, **kwargs: Any
) -> None:
    reason = getattr(instance, _CHANGED, "")
    if reason:
        setattr(instance, _CHANGED, "")
        revoke_all_of(instance, method=reason)
