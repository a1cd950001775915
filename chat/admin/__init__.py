"""The admin, by area: the site's offer (`profiles`: model profiles, site
defaults; `tool_servers`: MCP servers), conversations and share links
(`conversations`), people (`people`: teams, group rules, accounts,
invitations), and what the product writes, read only (`records`: API keys,
the audit log). Importing them registers them."""

from __future__ import annotations

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from chat.accounts.throttle import ThrottledAdminAuthenticationForm
from chat.admin import conversations, people, profiles, records, tool_servers

# The admin's own sign-in page is throttled like the site's.
admin.site.login_form = ThrottledAdminAuthenticationForm
# The admin is part of the product: named as chatsite, not as Django
# (templates/admin/base_site.html gives it chatsite's look).
admin.site.site_header = _("chatsite administration")
admin.site.site_title = _("chatsite administration")


__all__ = ["conversations", "people", "profiles", "records", "tool_servers"]
