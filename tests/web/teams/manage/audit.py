"""The audit log as the team management tests read it: the changes made, the
events of a kind."""

from __future__ import annotations

from chat.models import AuditEvent

Kind = AuditEvent.Kind


def changes() -> list[AuditEvent]:
    """The audit log but the sign-ins (`force_login` records one)."""
    return list(AuditEvent.objects.exclude(kind=Kind.SIGN_IN))


def events(kind: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(kind=kind).order_by("pk"))
