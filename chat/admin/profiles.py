"""The site's offer in the admin: the model profiles (with discovery from the
model servers) and the one row of site defaults, both audited."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext_lazy as _

from chat.models import (
    AuditEvent,
    ModelProfile,
    SiteDefaults,
)
from chat.ops import discovery_views
from chat.ops.admin_audit import AuditedAdmin


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
                    "supports_tools",
                    "think_with_tools",
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
