"""Calling the web tools as the engine does: a `ToolCall` with JSON
arguments, run by `WebTools` under a deadline. The test server is on
127.0.0.1, which the guard refuses: `tools` lets that one address through,
as an admin would (`WEB_FETCH_PRIVATE_ALLOW`), unless a test says otherwise."""

from __future__ import annotations

import json

from chat.tools.calls import Outcome, ToolCall
from chat.tools.web import WebTools
from chat.tools.web.addresses import Exceptions
from chat.tools.web.search import SearXNG
from chat.tools.web.sites import Sites
from chat.tools.web.source import fetch_spec, search_spec
from tests.tools.web.pages import Web

THE_TEST_SERVER = Exceptions.parse(["127.0.0.1/32"])


def tools(
    web: Web,
    *,
    sites: Sites | None = None,
    exceptions: Exceptions = THE_TEST_SERVER,
) -> WebTools:
    return WebTools(
        owner="web-tests",
        sites=sites or Sites.default(),
        search=SearXNG(web.base, max_bytes=1024 * 1024),
        exceptions=exceptions,
    )


async def fetched(tools: WebTools, url: str, *, deadline: float = 30) -> Outcome:
    call = ToolCall("call-1", "web_fetch", json.dumps({"url": url}))
    return await tools.run(fetch_spec(), call, deadline=deadline)


async def searched(tools: WebTools, query: str, *, deadline: float = 30) -> Outcome:
    call = ToolCall("call-1", "web_search", json.dumps({"query": query}))
    return await tools.run(search_spec(), call, deadline=deadline)
