"""The audit log: who signed in (or failed to), who invited whom, who
changed whose role or access, who exported whose conversations and which tools
ran for whom, with the time and the client's address. Listed for staff; written by
`AuditEvent.record` only, never edited."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils.translation import gettext_lazy as _


def called_in() -> Cast:
    """A `tool_call` event's answer (its detail's `message_id`), as the
    database reads it: indexed for those events, so the throughput page's
    table per tool (`chat.ops.tool_use`) finds an answer's calls at once,
    whatever the planner expects of the answers."""
    return Cast(KT("detail__message_id"), models.BigIntegerField())


class AuditEvent(models.Model):
    class Kind(models.TextChoices):
        SIGN_IN = "sign_in", _("Signed in")
        SIGN_IN_FAILED = "sign_in_failed", _("Sign-in failed")
        SIGN_OUT = "sign_out", _("Signed out")
        ACCOUNT_CREATED = "account_created", _("Account created")
        INVITATION_CREATED = "invitation_created", _("Invitation created")
        INVITATION_USED = "invitation_used", _("Invitation used")
        PASSWORD_CHANGED = "password_changed", _("Password changed")
        MEMBERSHIP_CHANGED = "membership_changed", _("Team membership changed")
        ROLE_CHANGED = "role_changed", _("Role changed")
        ACCESS_CHANGED = "access_changed", _("Model access changed")
        QUOTA_CHANGED = "quota_changed", _("Quota changed")
        API_KEY_CREATED = "api_key_created", _("API key created")
        API_KEY_REVOKED = "api_key_revoked", _("API key revoked")
        # A user set or cleared their credential for a tool server (the
        # server in `detail`, never the value: chat.web.account.tool_credentials).
        TOOL_SECRET_SET = "tool_secret_set", _("Tool credential set")
        TOOL_SECRET_CLEARED = "tool_secret_cleared", _("Tool credential cleared")
        # Staff took a copy of a user's conversations (chat.web.transfer).
        DATA_EXPORTED = "data_exported", _("Conversations exported")
        # The model called a tool in a user's answer (chat.live.engine.turn.tools).
        TOOL_CALL = "tool_call", _("Tool called")

    at = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("at"))
    kind = models.CharField(max_length=20, choices=Kind, verbose_name=_("kind"))
    # Who did it (None: the system, e.g. a sign-in's group rules) ...
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("actor"),
    )
    # ... to whom (a failed sign-in names only the username it tried).
    subject = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("subject"),
    )
    username = models.CharField(max_length=150, blank=True, verbose_name=_("username"))
    address = models.CharField(max_length=45, blank=True, verbose_name=_("address"))
    method = models.CharField(
        max_length=10,
        blank=True,
        help_text=_("password, oidc, ldap, invitation"),
        verbose_name=_("method"),
    )
    detail = models.JSONField(default=dict, blank=True, verbose_name=_("detail"))

    class Meta:
        verbose_name = _("audit event")
        verbose_name_plural = _("audit events")
        ordering = ["-at", "-pk"]
        indexes = [
            models.Index(
                called_in(),
                name="chat_audit_tool_call_answer",
                condition=models.Q(kind="tool_call"),
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.username or self.subject_id}"

    @classmethod
    def record(
        cls,
        kind: str,
        *,
        actor: Any = None,
        subject: Any = None,
        username: str = "",
        address: str = "",
        method: str = "",
        **detail: Any,
    ) -> AuditEvent:
        """One event. `actor`/`subject`: users (or None); `detail`: JSON values."""
        if subject is not None and not username:
            username = subject.get_username()
        return cls.objects.create(
            kind=kind,
            actor=actor if actor is not None and actor.pk else None,
            subject=subject,
            username=username[:150],
            address=address[:45],
            method=method,
            detail=detail,
        )
