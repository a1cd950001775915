"""The chat app's models, one module per subject, imported here so that
Django finds them and the rest of chat imports them from one place.

Flat on purpose, though it holds more than a dozen modules: the migrations
name some of these modules by their path (`chat.models.profiles`,
`chat.models.attachments`: callables of their fields), and a move would
rewrite the migrations of every install. By subject:

* conversations: `conversations`, `messages`, `history` (what is sent),
  `effective` and `sampling` (settings as they apply), `versions`, `paging`,
  `search`, `sidebar`, `folders`, and `turn_rows/` (a turn's rows, written
  once the engine has placed it);
* what is offered to everyone or chosen teams: `offering` (the one access
  rule of `profiles` and `tool_servers`);
* tools: `tool_servers` (MCP servers, users' credentials for them);
* the model servers: `profiles`, `site` (the site's defaults), `admission`
  (the fair queue's tickets), `compiled_queries` (the queries a turn runs
  before the model is asked, compiled once);
* files: `attachments`, `attachment_checks`, `attachment_prompts`;
* people: `accounts`, `teams`, `group_rules`, `api_keys`, `audit`, `notices`;
* tools: `web_sites` (the sites a team's web search may reach);
* usage: `quotas`, `quota_periods`;
* sharing: `sharing`, `shared_messages`.
"""

from __future__ import annotations

from chat.models.accounts import (
    ExternalAccount,
    Invitation,
    Language,
    Theme,
    UserSettings,
)
from chat.models.admission import Ticket
from chat.models.api_keys import ApiKey
from chat.models.attachment_checks import AttachmentRefused, DocumentsTooLarge
from chat.models.attachments import Attachment
from chat.models.audit import AuditEvent
from chat.models.conversations import Conversation, VersionSwitch
from chat.models.effective import Effective, EffectiveSettings, History, Level
from chat.models.folders import Folder
from chat.models.group_rules import GroupRule
from chat.models.history import Prompt
from chat.models.messages import Message, MessageQuerySet
from chat.models.notices import SettingsChange
from chat.models.profiles import (
    HistoryPolicy,
    ModelProfile,
    ModelProfileQuerySet,
    ThinkingMode,
)
from chat.models.quota_periods import QuotaPeriod
from chat.models.sampling import ThinkingSwitch, ThinkTags
from chat.models.shared_messages import SharedMessage
from chat.models.sharing import ShareLink
from chat.models.site import SiteDefaults
from chat.models.teams import Membership, Team
from chat.models.tool_servers import ToolCredential, ToolServer
from chat.models.turn_rows import ClientTools, Pending, Retry, Turn
from chat.models.versions import Versions
from chat.models.web_sites import TeamWebSites

__all__ = [
    "ApiKey",
    "Attachment",
    "AttachmentRefused",
    "ClientTools",
    "DocumentsTooLarge",
    "ExternalAccount",
    "AuditEvent",
    "GroupRule",
    "Invitation",
    "Membership",
    "QuotaPeriod",
    "Language",
    "Theme",
    "UserSettings",
    "Conversation",
    "Effective",
    "Folder",
    "EffectiveSettings",
    "History",
    "Level",
    "Prompt",
    "SettingsChange",
    "HistoryPolicy",
    "Message",
    "MessageQuerySet",
    "ModelProfile",
    "ModelProfileQuerySet",
    "Pending",
    "Retry",
    "SharedMessage",
    "ShareLink",
    "SiteDefaults",
    "Team",
    "TeamWebSites",
    "ThinkingMode",
    "ThinkingSwitch",
    "ThinkTags",
    "Ticket",
    "ToolCredential",
    "ToolServer",
    "Turn",
    "Versions",
    "VersionSwitch",
]
