"""Which sites web search and fetches may reach, for a user: the site-wide
lists (`WEB_SITES_ALLOW`, `WEB_SITES_DENY`) and those of each of the user's
teams (`chat.models.TeamWebSites`, in the admin).

A list names domains; a domain covers its subdomains (`example.org` covers
`docs.example.org`). A site must pass every list that applies: it is on no
deny list, and on each allow list that is not empty. A team that keeps its
members to a few sites is not opened up by another team they are on."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from chat.models import TeamWebSites


def domains(text: str | Iterable[str]) -> tuple[str, ...]:
    """The domains of a list (one a line, or commas, in the admin's field):
    lower case, without a scheme, path, port, leading `*.` or dots."""
    items = text.replace(",", "\n").splitlines() if isinstance(text, str) else text
    found: list[str] = []
    for item in items:
        item = item.strip().lower()
        if "://" in item:
            item = urlsplit(item).hostname or ""
        item = item.split("/", 1)[0].split(":", 1)[0].removeprefix("*.").strip(".")
        if item and item not in found:
            found.append(item)
    return tuple(found)


def covers(domain: str, host: str) -> bool:
    return host == domain or host.endswith("." + domain)


@dataclass(frozen=True)
class Lists:
    """One owner's lists (the site's, a team's)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def permits(self, host: str) -> bool:
        if any(covers(domain, host) for domain in self.deny):
            return False
        return not self.allow or any(covers(domain, host) for domain in self.allow)


@dataclass(frozen=True)
class Sites:
    """The lists that apply to one user's search and fetches."""

    lists: tuple[Lists, ...] = field(default_factory=tuple)

    def permits(self, url: str) -> bool:
        """Whether `url`'s host passes every list."""
        try:
            host = (urlsplit(url).hostname or "").lower().rstrip(".")
        except ValueError:
            return False
        return bool(host) and all(lists.permits(host) for lists in self.lists)

    @classmethod
    def default(cls) -> Sites:
        """The site-wide lists alone."""
        return cls((_site_lists(),))

    @classmethod
    async def of(cls, user: Any) -> Sites:
        """The lists for `user`: the site's and their teams'."""
        rows = TeamWebSites.objects.filter(team__members__pk=user.pk or 0)
        own = [Lists(domains(row.allow), domains(row.deny)) async for row in rows]
        return cls((_site_lists(), *(lists for lists in own if lists != Lists())))


def _site_lists() -> Lists:
    return Lists(domains(settings.WEB_SITES_ALLOW), domains(settings.WEB_SITES_DENY))
