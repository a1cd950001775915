"""Conversations and their share links in the admin: looked at, the links'
tokens never shown."""

from __future__ import annotations

from django.contrib import admin

from chat.models import (
    Conversation,
    Message,
    ShareLink,
)


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
        "include_tool_results",
        "snapshot_upto",
        "expires_at",
        "revoked_at",
        "created_at",
    )
