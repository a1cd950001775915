"""Rows the product writes, read only in the admin: the API keys (staff revoke
them, audited) and the audit log."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from chat.http.client_address import client_address
from chat.models import (
    ApiKey,
    AuditEvent,
)


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Rows written by the product only: listed and viewed here, never added,
    changed or deleted."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# ApiKey.state's words, as the admin's list shows them.
API_KEY_STATES = {
    "active": _("Active"),
    "expired": _("Expired"),
    "revoked": _("Revoked"),
}


class ApiKeyStateFilter(admin.SimpleListFilter):
    title = _("state")
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(state, str(label)) for state, label in API_KEY_STATES.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        state = self.value()
        return queryset.in_state(state) if state else queryset  # type: ignore[attr-defined]


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdmin):
    """Read only: people make their keys on their account page (or an operator
    with `manage.py create_api_key`), and only the owner ever sees one. Staff
    revoke them here, audited (`ApiKey.revoke`); a revoked key stays listed,
    with who revoked it and when."""

    list_display = [
        "name",
        "user",
        "shown_prefix",
        "state",
        "created_at",
        "expires_at",
        "last_used_at",
        "last_used_from",
    ]
    list_filter = [ApiKeyStateFilter, ("user", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["user"]
    search_fields = ["user__username", "name", "shown"]
    date_hierarchy = "created_at"
    fields = readonly_fields = (
        "user",
        "name",
        "shown_prefix",
        "state",
        "profiles",
        "store_conversations",
        "created_at",
        "expires_at",
        "last_used_at",
        "last_used_from",
        "revoked_at",
        "revoked_by",
    )
    actions = ["revoke_selected"]

    @admin.display(description=_("key"), ordering="shown")
    def shown_prefix(self, api_key: ApiKey) -> str:
        return f"{api_key.shown}…"

    @admin.display(description=_("state"))
    def state(self, api_key: ApiKey) -> str:
        return str(API_KEY_STATES[api_key.state])

    @admin.action(description=_("Revoke selected keys"), permissions=["revoke"])
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        address = client_address(request)
        keys = list(queryset.select_related("user"))
        revoked = sum(
            api_key.revoke(actor=request.user, address=address, method="admin")
            for api_key in keys
        )
        already = len(keys) - revoked
        self.message_user(
            request,
            ngettext("Revoked %(count)d key", "Revoked %(count)d keys", revoked)
            % {"count": revoked}
            + (
                _(" (%(count)d already were).") % {"count": already} if already else "."
            ),
        )

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("chat.change_apikey")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Read only: the log is written by `AuditEvent.record`, never edited."""

    list_display = ["at", "kind", "actor", "username", "address", "method"]
    list_filter = ["kind", "method"]
    search_fields = ["username", "actor__username", "address"]
    date_hierarchy = "at"
    fields = readonly_fields = (
        "at",
        "kind",
        "actor",
        "subject",
        "username",
        "address",
        "method",
        "detail",
    )
