"""Web search and page fetching in the registry of tool sources
(`chat.tools.toolbox`): offered to every user, under their sites' lists
(`WebTools.of`); `web_search` only where a search endpoint is set up."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.utils.translation import gettext as _

from chat.tools import toolbox
from chat.tools.web.source import SOURCE, WebTools


async def offers(user: Any, sources: Collection[str] | None) -> list[toolbox.Offer]:
    if sources is not None and SOURCE not in sources:
        return []
    tools = await WebTools.of(user)
    return [toolbox.Offer(SOURCE, _("Web search"), tools, tools.specs())]


toolbox.register("web", offers)
