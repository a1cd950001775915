"""People in the admin: teams and their members, the sign-in group rules, the
accounts (audited), and invitations (a link shown once)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from chat.http.client_address import client_address
from chat.models import (
    AuditEvent,
    GroupRule,
    Invitation,
    Membership,
    Team,
    TeamWebSites,
)
from chat.ops.admin_audit import AuditedTeamAdmin, AuditedUserAdmin


class LabelledInlineFormSet(forms.BaseInlineFormSet):  # type: ignore[type-arg]
    """A tabular inline's fields are labelled only by their column's heading,
    which screen readers do not tie to them: each field gets its label as its
    accessible name (axe's `label` and `select-name` rules,
    tests/browser/site/test_accessibility.py)."""

    def add_fields(self, form: forms.ModelForm[Any], index: int | None) -> None:
        super().add_fields(form, index)
        for field in form.fields.values():
            if field.label and not field.widget.is_hidden:
                field.widget.attrs.setdefault("aria-label", str(field.label))


class MembershipInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Membership
    formset = LabelledInlineFormSet
    fields = ["user", "role", "synced"]
    readonly_fields = ["synced"]
    autocomplete_fields = ["user"]
    extra = 0


class WebSitesInline(admin.StackedInline):  # type: ignore[type-arg]
    model = TeamWebSites
    fields = ["allow", "deny"]
    extra = 0


@admin.register(Team)
class TeamAdmin(AuditedTeamAdmin):
    def view_on_site(self, obj: Team) -> str:
        # The team page's management, where staff see the team's usage.
        return reverse("team_manage", args=[obj.pk])

    list_display = ["name"]
    search_fields = ["name", "members__username"]
    inlines = [MembershipInline, WebSitesInline]
    # Owners share their conversations from the conversation page.
    readonly_fields = ["conversations"]


# Teams are chatsite's one grouping of people (sign-in group rules map a
# provider's groups to them): Django's own Groups would be a second concept.
admin.site.unregister(Group)
admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), AuditedUserAdmin)


@admin.register(GroupRule)
class GroupRuleAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["group", "source", "team", "team_role", "makes_staff"]
    list_filter = ["source", "makes_staff", "team"]
    search_fields = ["group", "team__name"]
    autocomplete_fields = ["team"]


class InvitationAdminForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Invitation
        fields = ["email", "team", "expires_at"]

    def clean_expires_at(self) -> Any:
        expires_at = self.cleaned_data["expires_at"]
        # A new link that never worked would be sent in vain; an existing one
        # may be ended now (withdrawn).
        if self.instance.pk is None and expires_at <= timezone.now():
            raise forms.ValidationError(
                _(
                    "This time has passed: the link would never work. Choose a "
                    "time in the future."
                )
            )
        return expires_at


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Adding one shows its link once, on the page after saving: only the
    token's hash is stored. Afterwards only the expiry can change (set it to
    now to withdraw the link)."""

    form = InvitationAdminForm
    list_display = ["__str__", "created_by", "created_at", "expires_at", "state"]
    list_filter = ["team"]
    search_fields = ["email", "team__name", "created_by__username"]
    # Between save_model and response_add of one request, by invitation pk.
    _new_links: dict[int, str] = {}

    @admin.display(description=_("state"))
    def state(self, invitation: Invitation) -> str:
        if invitation.used_at is not None:
            return str(_("used by %(user)s")) % {
                "user": invitation.used_by or _("a deleted account")
            }
        return str(_("open") if invitation.usable else _("expired"))

    def get_fields(
        self, request: HttpRequest, obj: Invitation | None = None
    ) -> tuple[str, ...]:
        fields = ("email", "team", "expires_at")
        if obj is None:
            return fields
        return (*fields, "created_by", "created_at", "used_at", "used_by")

    def get_readonly_fields(
        self, request: HttpRequest, obj: Invitation | None = None
    ) -> list[str]:
        if obj is None:
            return []
        return ["email", "team", "created_by", "created_at", "used_at", "used_by"]

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        return {"expires_at": timezone.now() + Invitation.DEFAULT_LIFETIME}

    def save_model(
        self, request: HttpRequest, obj: Invitation, form: Any, change: bool
    ) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        obj.created_by = request.user  # type: ignore[assignment]
        token = obj.issue_token()
        super().save_model(request, obj, form, change)
        self._new_links[obj.pk] = token
        AuditEvent.record(
            AuditEvent.Kind.INVITATION_CREATED,
            actor=request.user,
            address=client_address(request),
            method="admin",
            invitation=obj.pk,
            email=obj.email,
            team=obj.team.name if obj.team else None,
            expires_at=obj.expires_at.isoformat(),
        )

    def response_add(
        self, request: HttpRequest, obj: Invitation, post_url_continue: Any = None
    ) -> HttpResponse:
        token = self._new_links.pop(obj.pk)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": _("Invitation created"),
            "invitation": obj,
            "link": request.build_absolute_uri(reverse("invitation", args=[token])),
        }
        return TemplateResponse(request, "chat/invitation_created_admin.html", context)
