from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from chat.accounts.throttle import ThrottledAdminAuthenticationForm
from chat.http.client_address import client_address
from chat.models import (
    ApiKey,
    AuditEvent,
    Conversation,
    GroupRule,
    Invitation,
    Membership,
    Message,
    ModelProfile,
    ShareLink,
    SiteDefaults,
    Team,
)
from chat.ops import discovery_views
from chat.ops.admin_audit import AuditedAdmin, AuditedTeamAdmin, AuditedUserAdmin

# The admin's own sign-in page is throttled like the site's.
admin.site.login_form = ThrottledAdminAuthenticationForm
# The admin is part of the product: named as chatsite, not as Django
# (templates/admin/base_site.html gives it chatsite's look).
admin.site.site_header = _("chatsite administration")
admin.site.site_title = _("chatsite administration")

# ApiKey.state's words, as the admin's list shows them.
API_KEY_STATES = {
    "active": _("Active"),
    "expired": _("Expired"),
    "revoked": _("Revoked"),
}


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Rows written by the product only: listed and viewed here, never added,
    changed or deleted."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ModelProfile)
class ModelProfileAdmin(AuditedAdmin):
    audit_access_m2m = ("teams",)  # audited: chat.ops.admin_audit
    list_display = [
        "tag",
        "display_name",
        "backend",
        "base_url",
        "enabled",
        "is_demo",
        "supports_thinking",
        "context_length",
        "family",
        "parameter_size",
        "quantization",
    ]
    list_filter = ["backend", "enabled", "is_demo"]
    search_fields = ["tag", "display_name", "base_url"]
    readonly_fields = ["chars_per_token"]
    filter_horizontal = ["teams"]
    fieldsets = [
        (None, {"fields": ["tag", "display_name", "enabled", "is_demo"]}),
        (
            _("Who may use it"),
            {
                "description": _(
                    "Only members of the chosen teams are offered the "
                    "model; none chosen: everyone."
                ),
                "fields": ["teams"],
            },
        ),
        (
            _("Server"),
            {
                "fields": [
                    "backend",
                    "base_url",
                    "parallel_slots",
                    "keep_alive",
                    "thinking_switch",
                    "think_tags",
                    "first_token_timeout",
                ]
            },
        ),
        (
            _("Model"),
            {
                "fields": [
                    "supports_thinking",
                    "supports_vision",
                    "image_max_side",
                    "context_length",
                    "chars_per_token",
                    "family",
                    "parameter_size",
                    "quantization",
                ]
            },
        ),
        (
            _("Defaults for its conversations"),
            {
                "description": _(
                    "A conversation's own setting wins; blank here "
                    "means the site default."
                ),
                "fields": [
                    "default_thinking",
                    "default_history_policy",
                    "default_history_last_n",
                    "options",
                ],
            },
        ),
    ]

    actions = [discovery_views.refresh_from_server]

    def get_urls(self) -> list[URLPattern]:
        discover = self.admin_site.admin_view(
            lambda request: discovery_views.discover_view(self, request)
        )
        name = "chat_modelprofile_discover"
        return [path("discover/", discover, name=name), *super().get_urls()]


class MessageInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Message
    fields = readonly_fields = ("role", "status", "model_tag", "content", "created_at")
    extra = 0
    can_delete = False


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["__str__", "owner", "model_profile", "thinking", "updated_at"]
    list_filter = ["thinking"]
    search_fields = ["title", "owner__username"]
    inlines = [MessageInline]


@admin.register(SiteDefaults)
class SiteDefaultsAdmin(AuditedAdmin):
    """One row: it can be changed, not added twice nor deleted."""

    audit_fields = {
        **dict.fromkeys(
            ["quota_period", "user_output_tokens", "user_answers"],
            AuditEvent.Kind.QUOTA_CHANGED,
        ),
        "api_enabled": AuditEvent.Kind.ACCESS_CHANGED,
    }
    audit_access_m2m = ("api_teams",)
    filter_horizontal = ["api_teams"]

    fieldsets = [
        (
            _("New conversations"),
            {
                "description": _(
                    "What a conversation gets when neither it nor its "
                    "model profile says otherwise."
                ),
                "fields": [
                    "default_profile",
                    "default_thinking",
                    "default_history_policy",
                    "default_history_last_n",
                ],
            },
        ),
        (
            _("Limits and sharing"),
            {"fields": ["generations_per_user", "share_requires_sign_in"]},
        ),
        (
            _("Quota of each user"),
            {
                "description": _(
                    "Counted from the stored answers, per UTC day or "
                    "month; a team's own quotas are set on the team. 0: no limit."
                ),
                "fields": ["quota_period", "user_output_tokens", "user_answers"],
            },
        ),
        (
            _("API"),
            {
                "description": _(
                    "The OpenAI- and Ollama-compatible API, used with "
                    "the personal keys people make on their account page (listed "
                    "under API keys). Closing it refuses every key at once; the keys "
                    "are kept."
                ),
                "fields": ["api_enabled", "api_teams"],
            },
        ),
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not SiteDefaults.objects.exists()

    def has_delete_permission(
        self, request: HttpRequest, obj: SiteDefaults | None = None
    ) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """Straight to the one row."""
        site = SiteDefaults.load()
        return redirect(reverse("admin:chat_sitedefaults_change", args=[site.pk]))


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


@admin.register(Team)
class TeamAdmin(AuditedTeamAdmin):
    def view_on_site(self, obj: Team) -> str:
        # The team page's management, where staff see the team's usage.
        return reverse("team_manage", args=[obj.pk])

    list_display = ["name"]
    search_fields = ["name", "members__username"]
    inlines = [MembershipInline]
    # Owners share their conversations from the conversation page.
    readonly_fields = ["conversations"]


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["__str__", "created_by", "mode", "expires_at", "revoked_at"]
    list_filter = ["mode"]
    search_fields = ["conversation__title", "created_by__username"]
    fields = readonly_fields = (
        "conversation",
        "created_by",
        "token_hint",
        "mode",
        "include_thinking",
        "snapshot_upto",
        "expires_at",
        "revoked_at",
        "created_at",
    )


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


# --- Identity: sign-in group rules, the audit log ---

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


# --- Invitations ---


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
