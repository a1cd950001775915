from __future__ import annotations

from django.contrib import admin

from chat.models import Conversation, Message, ModelProfile
from chat.signin import ThrottledAdminAuthenticationForm

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
    ]
    list_filter = ["backend", "enabled", "is_demo"]
    search_fields = ["tag", "display_name", "base_url"]


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
