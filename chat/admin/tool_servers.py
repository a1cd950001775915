"""MCP servers in the admin (`chat.models.ToolServer`): who may use them,
how they are reached, and an action that connects and lists their tools.
Users' credentials are not here: they are theirs, encrypted, never shown."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from chat.models import ToolServer
from chat.ops.admin_audit import AuditedAdmin
from chat.tools.mcp import Reachable, offer
from chat.tools.mcp.config import ServerConfig


@admin.action(description=_("Test the connection and list the tools"))
def list_tools(
    admin_: ToolServerAdmin, request: HttpRequest, queryset: QuerySet[ToolServer]
) -> None:
    """Connects to each chosen server (with its own headers, no user's
    credential) and says what it offers, or why it could not."""
    servers = [
        Reachable(ServerConfig.of(server), dict(server.headers)) for server in queryset
    ]
    offered = async_to_sync(offer)(servers)
    for server in servers:
        name = server.config.name
        if name in offered.unavailable:
            admin_.message_user(
                request,
                gettext("%(name)s: %(reason)s")
                % {"name": name, "reason": offered.unavailable[name]},
                messages.ERROR,
            )
            continue
        tools = [
            spec.name for spec in offered.specs if spec.source == server.config.source
        ]
        admin_.message_user(
            request,
            gettext("%(name)s answers: %(count)d tools (%(tools)s).")
            % {"name": name, "count": len(tools), "tools": ", ".join(tools)},
            messages.SUCCESS,
        )


@admin.register(ToolServer)
class ToolServerAdmin(AuditedAdmin):
    audit_access_m2m = ("teams",)  # audited: chat.ops.admin_audit
    list_display = ["name", "slug", "transport", "enabled", "needs_approval", "timeout"]
    list_filter = ["transport", "enabled"]
    search_fields = ["name", "slug", "url", "command"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["teams"]
    actions = [list_tools]
    fieldsets = [
        (None, {"fields": ["name", "slug", "enabled", "transport", "timeout"]}),
        (
            _("Who may use it"),
            {
                "description": _(
                    "Only members of the chosen teams are offered its tools; "
                    "none chosen: everyone."
                ),
                "fields": ["teams"],
            },
        ),
        (
            _("Streamable HTTP"),
            {"fields": ["url", "headers", "credential_header", "credential_prefix"]},
        ),
        (
            _("stdio"),
            {
                "description": _(
                    "The site starts the command once in each of its processes, "
                    "starts it again when it ends, and stops it with the site."
                ),
                "fields": ["command", "args", "env"],
            },
        ),
        (
            _("Approval"),
            {
                "description": _("The user confirms each call before it runs."),
                "fields": ["needs_approval", "tools_needing_approval"],
            },
        ),
    ]
