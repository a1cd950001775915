"""The account a provider's identity signs in as: the one seam both sign-in
ways (`chat.accounts.oidc`, `chat.accounts.ldap`) go through after the provider
has vouched for the person.

`provision` finds the account by the provider's own identifier
(`ExternalAccount`), creates it on first sign-in (if the email's domain is
allowed), updates name and email at every sign-in, and applies the sign-in
group rules (`GroupRule.apply`), all in one transaction: a refusal leaves no
half account. Each outcome is recorded in the audit log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from chat.accounts import usernames
from chat.models import AuditEvent, ExternalAccount, GroupRule

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class Refused(Exception):
    """The sign-in is refused; `str(exc)` is the message for the person."""


@dataclass(frozen=True)
class Identity:
    """What a provider vouched for."""

    method: str  # "oidc" or "ldap"
    subject: str  # the provider's stable identifier (OIDC `sub`, LDAP username)
    username: str  # the username a new account gets
    email: str = ""
    email_verified: bool = True
    first_name: str = ""
    last_name: str = ""
    groups: tuple[str, ...] = field(default_factory=tuple)


def email_domain_allowed(email: str) -> bool:
    """`CHATSITE_ALLOWED_EMAIL_DOMAINS` (blank: any) holds the email's domain."""
    allowed = [d.casefold() for d in settings.CHATSITE_ALLOWED_EMAIL_DOMAINS]
    if not allowed:
        return True
    domain = email.rpartition("@")[2].casefold()
    return bool(email) and domain in allowed


def provision(identity: Identity, *, address: str = "") -> User:
    """The account `identity` signs in as, created or updated; Refused (and
    nothing stored but the audit event) when it may not sign in."""
    try:
        with transaction.atomic():
            user, created = _account(identity)
            applied = GroupRule.apply(user, identity.groups, identity.method)
    except Refused as refusal:
        AuditEvent.record(
            AuditEvent.Kind.SIGN_IN_FAILED,
            username=identity.username,
            address=address,
            method=identity.method,
            reason=str(refusal),
        )
        raise
    if created:
        AuditEvent.record(
            AuditEvent.Kind.ACCOUNT_CREATED,
            subject=user,
            address=address,
            method=identity.method,
        )
    if applied.joined or applied.left:
        AuditEvent.record(
            AuditEvent.Kind.MEMBERSHIP_CHANGED,
            subject=user,
            address=address,
            method=identity.method,
            joined=applied.joined,
            left=applied.left,
            groups=list(identity.groups),
        )
    if applied.staff is not None:
        AuditEvent.record(
            AuditEvent.Kind.ROLE_CHANGED,
            subject=user,
            address=address,
            method=identity.method,
            staff=applied.staff[1],
            groups=list(identity.groups),
        )
    return user


def _account(identity: Identity) -> tuple[User, bool]:
    if identity.email and not identity.email_verified:
        raise Refused(
            gettext(
                "Your identity provider has not verified your email address, so "
                "this site cannot sign you in with it. Verify it there, then try "
                "again."
            )
        )
    link = (
        ExternalAccount.objects.select_for_update()
        .select_related("user")
        .filter(method=identity.method, subject=identity.subject)
        .first()
    )
    users = get_user_model()._default_manager
    if link is None:
        if not email_domain_allowed(identity.email):
            raise Refused(
                gettext(
                    "Accounts are made here only for email addresses of %(domains)s."
                )
                % {"domains": ", ".join(settings.CHATSITE_ALLOWED_EMAIL_DOMAINS)}
            )
        # Refused rather than renamed: a name beside one it looks like is
        # what an impersonation needs, and the person is most often the
        # same, whose accounts an admin links (README, "Sign-in").
        username = usernames.normalise(identity.username)
        if usernames.look_alike(username) is not None:
            raise Refused(
                gettext(
                    "An account named “%(username)s” (or one that looks like it) "
                    "already exists here and is not linked to your sign-in. Ask "
                    "an admin to link or rename it."
                )
                % {"username": username}
            )
        unsafe = usernames.mixed_scripts(username)
        if unsafe:
            raise Refused(unsafe)
        user = users.create_user(
            username=username,
            email=identity.email,
            first_name=identity.first_name[:150],
            last_name=identity.last_name[:150],
        )
        user.set_unusable_password()
        user.save(update_fields=["password"])
        link = ExternalAccount.objects.create(
            user=user, method=identity.method, subject=identity.subject
        )
        created = True
    else:
        user = link.user
        created = False
        if not user.is_active:
            raise Refused(
                gettext(
                    "This account is switched off. Ask an admin if you need it back."
                )
            )
        user.email = identity.email or user.email
        user.first_name = identity.first_name[:150] or user.first_name
        user.last_name = identity.last_name[:150] or user.last_name
        user.save(update_fields=["email", "first_name", "last_name"])
    link.last_sign_in = timezone.now()
    link.save(update_fields=["last_sign_in"])
    return user, created
