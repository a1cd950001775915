"""The Django admin's changes of access, quotas and team memberships, into the
audit log (the team page audits its own: `Team.add_member` and the others).
Mixed into the model admins of `chat.admin`."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, ClassVar

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.db.models import QuerySet
from django.forms import BaseInlineFormSet, ModelForm
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils.translation import gettext_lazy as _

from chat.accounts.usernames import LookAlikeRefused
from chat.http.client_address import client_address
from chat.models import AuditEvent, Membership, Team
from chat.transfer.responses import staff_export


def _plain(value: Any) -> Any:
    """A form value as JSON holds it."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


class AuditedAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """`audit_fields`: field name → the kind of change it is (a quota, a
    role); `audit_access_m2m`: many-to-many fields whose change is an access
    change (a model profile's teams)."""

    audit_fields: ClassVar[dict[str, str]] = {}
    audit_access_m2m: ClassVar[tuple[str, ...]] = ()

    def _record(self, request: HttpRequest, kind: str, obj: Any, **detail: Any) -> None:
        AuditEvent.record(
            kind,
            actor=request.user,
            # A change of a person's own account names them.
            subject=obj if isinstance(obj, get_user_model()) else None,
            address=client_address(request),
            via="admin",
            model=str(obj._meta.verbose_name),
            object=str(obj),
            object_id=obj.pk,
            **detail,
        )

    def save_model(
        self, request: HttpRequest, obj: Any, form: ModelForm[Any], change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        by_kind: dict[str, dict[str, list[Any]]] = {}
        for name, kind in self.audit_fields.items():
            if name in form.changed_data:
                by_kind.setdefault(kind, {})[name] = [
                    _plain(form.initial.get(name)),
                    _plain(form.cleaned_data.get(name)),
                ]
        for kind, changes in by_kind.items():
            self._record(request, kind, obj, changes=changes)

    def save_related(
        self,
        request: HttpRequest,
        form: ModelForm[Any],
        formsets: list[BaseInlineFormSet[Any, Any, Any]],
        change: bool,
    ) -> None:
        obj = form.instance
        before = {name: self._related(obj, name) for name in self.audit_access_m2m}
        super().save_related(request, form, formsets, change)
        for name, earlier in before.items():
            now = self._related(obj, name)
            if now != earlier:
                self._record(
                    request,
                    AuditEvent.Kind.ACCESS_CHANGED,
                    obj,
                    field=name,
                    added=sorted(now - earlier),
                    removed=sorted(earlier - now),
                    now=sorted(now),
                )

    @staticmethod
    def _related(obj: Any, name: str) -> set[str]:
        return {str(related) for related in getattr(obj, name).all()}


class AuditedTeamAdmin(AuditedAdmin):
    """A team's memberships (the inline) audited per person, as the team page
    audits them: who joined, who left, whose role changed."""

    audit_fields = dict.fromkeys(
        [
            "quota_period",
            "team_output_tokens",
            "team_answers",
            "member_output_tokens",
            "member_answers",
        ],
        AuditEvent.Kind.QUOTA_CHANGED,
    )

    def save_related(
        self,
        request: HttpRequest,
        form: ModelForm[Any],
        formsets: list[BaseInlineFormSet[Any, Any, Any]],
        change: bool,
    ) -> None:
        team: Team = form.instance
        before = _roles(team)
        super().save_related(request, form, formsets, change)
        after = _roles(team)
        users = get_user_model()._default_manager.in_bulk(set(before) | set(after))
        for user_id in sorted(set(before) | set(after)):
            subject = users.get(user_id)
            if user_id not in before or user_id not in after:
                joined = user_id in after
                self._audit_member(
                    request,
                    AuditEvent.Kind.MEMBERSHIP_CHANGED,
                    team,
                    subject,
                    **({"joined": True} if joined else {"left": True}),
                )
            elif before[user_id] != after[user_id]:
                self._audit_member(
                    request,
                    AuditEvent.Kind.ROLE_CHANGED,
                    team,
                    subject,
                    role=[before[user_id], after[user_id]],
                )

    @staticmethod
    def _audit_member(
        request: HttpRequest, kind: str, team: Team, subject: Any, **detail: Any
    ) -> None:
        AuditEvent.record(
            kind,
            actor=request.user,
            subject=subject,
            address=client_address(request),
            team=team.name,
            team_id=team.pk,
            via="admin",
            **detail,
        )


class _AddUserForm(LookAlikeRefused, AdminUserCreationForm):  # type: ignore[type-arg]
    pass


class _ChangeUserForm(LookAlikeRefused, UserChangeForm):  # type: ignore[type-arg]
    pass


class AuditedUserAdmin(AuditedAdmin, UserAdmin):  # type: ignore[type-arg]
    """Django's user admin, without Groups (teams are the one grouping:
    `chat.admin`), its staff and superuser switches audited as role changes
    and switching an account off or on as an access change; an action exports
    a user's conversations (audited too)."""

    audit_fields = {
        "is_staff": AuditEvent.Kind.ROLE_CHANGED,
        "is_superuser": AuditEvent.Kind.ROLE_CHANGED,
        "is_active": AuditEvent.Kind.ACCESS_CHANGED,
    }
    fieldsets = tuple(
        (name, {**options, "fields": [f for f in options["fields"] if f != "groups"]})
        for name, options in UserAdmin.fieldsets or ()
    )
    filter_horizontal = ("user_permissions",)
    list_filter = ("is_staff", "is_superuser", "is_active")
    # No username that looks like another account's (chat.accounts.usernames).
    add_form = _AddUserForm
    form = _ChangeUserForm
    actions = ["export_conversations"]

    @admin.action(
        description=_("Export the selected user's conversations (ZIP)"),
        permissions=["change"],
    )
    def export_conversations(
        self, request: HttpRequest, queryset: QuerySet[Any]
    ) -> HttpResponseBase | None:
        """For a departing colleague: the same ZIP they would download from
        their own page, recorded in the audit log."""
        if queryset.count() != 1:
            self.message_user(
                request, _("Select one user to export at a time."), messages.WARNING
            )
            return None
        return staff_export(request, queryset.get())


def _roles(team: Team) -> dict[int, str]:
    return dict(Membership.objects.filter(team=team).values_list("user_id", "role"))
