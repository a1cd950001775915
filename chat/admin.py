from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import URLPattern, path, reverse

from chat.models import (
    Conversation,
    Membership,
    Message,
    ModelProfile,
    ShareLink,
    SiteDefaults,
    Team,
)
from chat.ops import discovery_views
from chat.web.signin import ThrottledAdminAuthenticationForm

# The admin's own sign-in page is throttled like the site's.
admin.site.login_form = ThrottledAdminAuthenticationForm


@admin.register(ModelProfile)
class ModelProfileAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
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
            "Who may use it",
            {
                "description": "Only members of the chosen teams are offered the "
                "model; none chosen: everyone.",
                "fields": ["teams"],
            },
        ),
        (
            "Server",
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
            "Model",
            {
                "fields": [
                    "supports_thinking",
                    "context_length",
                    "chars_per_token",
                    "family",
                    "parameter_size",
                    "quantization",
                ]
            },
        ),
        (
            "Defaults for its conversations",
            {
                "description": "A conversation's own setting wins; blank here "
                "means the site default.",
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
class SiteDefaultsAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """One row: it can be changed, not added twice nor deleted."""

    fieldsets = [
        (
            "New conversations",
            {
                "description": "What a conversation gets when neither it nor its "
                "model profile says otherwise.",
                "fields": [
                    "default_profile",
                    "default_thinking",
                    "default_history_policy",
                    "default_history_last_n",
                ],
            },
        ),
        (
            "Limits and sharing",
            {"fields": ["generations_per_user", "share_requires_sign_in"]},
        ),
        (
            "Quota of each user",
            {
                "description": "Counted from the stored answers, per UTC day or "
                "month; a team's own quotas are set on the team. 0: no limit.",
                "fields": ["quota_period", "user_output_tokens", "user_answers"],
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


class MembershipInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Membership
    fields = ["user", "role", "synced"]
    readonly_fields = ["synced"]
    autocomplete_fields = ["user"]
    extra = 0


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
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
