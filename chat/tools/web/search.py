"""Web search providers behind one small interface: a query in, results
(title, address, snippet) out, or `SearchFailed` with a reason for the model.

SearXNG is the self-hosted default: `GET <base>/search?q=...&format=json`
(its JSON output must be enabled in its settings.yml, `search.formats`).
Another provider is a class with the same `search` method, named in
`PROVIDERS` and chosen by `WEB_SEARCH_PROVIDER`. The endpoint is the admin's,
not a page the model chose, so it is not held to the fetch guard
(`chat.tools.web.addresses`: a SearXNG usually runs on the same host or
network); its answer is still read to a limit, and parsed off the event loop."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
from django.conf import settings
from django.utils.translation import gettext as _

from chat.tools.web.addresses import Refused
from chat.tools.web.fetching import read_body


@dataclass(frozen=True)
class Result:
    title: str
    url: str
    snippet: str


class SearchFailed(Exception):
    """The provider gave no results; `str(exc)` says why, for the model."""


class Provider(Protocol):
    async def search(self, query: str, *, count: int) -> list[Result]:
        """At most `count` results for `query`; raises `SearchFailed`."""
        ...


class SearXNG:
    """A SearXNG instance (or anything answering its JSON format)."""

    def __init__(self, base_url: str, *, max_bytes: int) -> None:
        self.base_url = base_url.rstrip("/")
        self.max_bytes = max_bytes

    async def search(self, query: str, *, count: int) -> list[Result]:
        try:
            async with (
                httpx.AsyncClient(trust_env=False) as client,
                client.stream(
                    "GET",
                    f"{self.base_url}/search",
                    params={"q": query, "format": "json"},
                    headers={"Accept": "application/json"},
                ) as response,
            ):
                if response.status_code != 200:
                    raise SearchFailed(
                        _("The search engine answered HTTP %(status)s.")
                        % {"status": response.status_code}
                    )
                body, cut = await read_body(response, self.max_bytes)
        except httpx.HTTPError as exc:
            raise SearchFailed(
                _("The search engine could not be reached: %(error)s")
                % {"error": str(exc) or type(exc).__name__}
            ) from None
        except Refused as refused:
            raise SearchFailed(str(refused)) from None
        if cut:
            raise SearchFailed(_("The search engine's answer was too large."))
        return _results(await asyncio.to_thread(_parsed, body))[:count]


def _parsed(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _results(data: Any) -> list[Result]:
    items = data.get("results") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise SearchFailed(_("The search engine's answer was not search results."))
    found: list[Result] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        url = item.get("url")
        if not isinstance(url, str) or not url.lower().startswith(
            ("http://", "https://")
        ):
            continue
        title, snippet = item.get("title"), item.get("content")
        found.append(
            Result(
                title=" ".join(str(title or url).split())[:300],
                url=url[:2000],
                snippet=" ".join(str(snippet or "").split())[:1000],
            )
        )
    return found


PROVIDERS = {"searxng": SearXNG}


def provider() -> Provider | None:
    """The configured provider; None when web search is not set up."""
    if not settings.WEB_SEARCH_URL:
        return None
    kind = PROVIDERS.get(settings.WEB_SEARCH_PROVIDER)
    if kind is None:
        return None
    return kind(settings.WEB_SEARCH_URL, max_bytes=settings.WEB_SEARCH_MAX_BYTES)
