from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, path

from chat import discovery_admin
from chat.models import Conversation, Message, ModelProfile


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
    actions = [discovery_admin.refresh_from_server]

    def get_urls(self) -> list[URLPattern]:
        discover = self.admin_site.admin_view(
            lambda request: discovery_admin.discover_view(self, request)
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
