"""The tools of one turn, from every source a site has: the registry the
sources plug into, and what the engine asks of it (`wanted`, `resolve`).

A source of tools (MCP servers, `chat.tools.mcp`; web search, `chat.tools.web`)
registers a provider once, as its module is imported:

    toolbox.register("web", offers)

and lists that module in `SOURCE_MODULES` below (or a site's setting
`TOOL_SOURCE_MODULES`), which this module imports the first time it is
asked. A provider is a coroutine function called with a user and the
sources a conversation switched on (None: every source, for the composer's
tools menu, `available`); it may read the database (through
`sync_to_async`) and ask over the network (an MCP server's list of tools).
It returns `Offer`s: one per source (`ToolSpec.source`, e.g. `mcp:3`,
`web`), its title, the `ToolSource` and the `ToolSpec`s it runs, or why it
offers none now (`unavailable`: a server down, said to the user). A provider
that fails costs the turn its tools, not the turn: it is logged and skipped.

A turn's tools come in two steps. In the database thread, while the turn is
prepared, `wanted` reads `Conversation.tool_choices` (no query, no await): a
conversation with nothing switched on gets None, and its turn is the single
model call it always was. Otherwise the turn awaits `resolve` before its
first model call (`chat.live.engine.turn.tools.converse`): the providers of
the sources switched on are asked at once, together, and of what they offer
the turn gets what the conversation switched on (a source not named is off,
a tool not named follows its source).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings

from chat.tools.calls import ToolSource, ToolSpec

if TYPE_CHECKING:
    from chat.models import Conversation

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Offer:
    """Tools a source offers a user, and the source that runs them."""

    id: str  # the specs' `source`
    title: str
    source: ToolSource
    specs: Sequence[ToolSpec]
    # Why the source offers no tools now (a server down), for the user.
    unavailable: str = ""


# (user, the sources switched on, None: all) -> what they offer the user.
Provider = Callable[[Any, Collection[str] | None], Awaitable[Iterable[Offer]]]

# The modules that register the site's sources when imported.
SOURCE_MODULES: tuple[str, ...] = ("chat.tools.mcp.offers", "chat.tools.web.offers")

_providers: dict[str, Provider] = {}
_loaded = False


def register(name: str, provider: Provider) -> None:
    """Make `provider` a source of every turn's tools (again under the same
    `name`: replaced, so a module imported twice registers once)."""
    _providers[name] = provider


def unregister(name: str) -> None:
    _providers.pop(name, None)


@dataclass(frozen=True)
class Toolbox:
    """The tools a turn offers the model, by the name the model calls them."""

    specs: tuple[ToolSpec, ...] = ()
    _sources: dict[str, ToolSource] = field(default_factory=dict, repr=False)
    # What the user is told of sources switched on that offer nothing now.
    notices: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.specs)

    def offered(self) -> list[dict[str, Any]]:
        """The `tools` list of the model server's request."""
        return [spec.offered() for spec in self.specs]

    def find(self, name: str) -> tuple[ToolSpec, ToolSource] | None:
        """The tool the model named, and its source (None: no such tool)."""
        for spec in self.specs:
            if spec.name == name:
                return spec, self._sources[name]
        return None

    @classmethod
    def of(cls, offers: Iterable[Offer]) -> Toolbox:
        """The offers' tools; of two with one name, the first offered."""
        specs: list[ToolSpec] = []
        sources: dict[str, ToolSource] = {}
        for offer in offers:
            for spec in offer.specs:
                if spec.name in sources:
                    logger.warning("tool %r offered twice: the first kept", spec.name)
                    continue
                specs.append(spec)
                sources[spec.name] = offer.source
        notices = tuple(
            f"{offer.title}: {offer.unavailable}"
            for offer in offers
            if offer.unavailable
        )
        return cls(tuple(specs), sources, notices)


NO_TOOLS = Toolbox()


def has_sources() -> bool:
    """Whether any source of tools is registered (else a turn asks none)."""
    _load()
    return bool(_providers)


async def available(user: Any) -> list[Offer]:
    """Every source of tools `user` may switch on (the tools menu)."""
    return await _offers(user, None)


@dataclass(frozen=True)
class Wanted:
    """What a conversation switched on: sources (ids), and single tools
    (`<source>/<tool>`: on or off; one not named follows its source)."""

    user: Any
    sources: frozenset[str]
    tools: Mapping[str, bool] = field(default_factory=dict)


def wanted(conversation: Conversation) -> Wanted | None:
    """What `conversation` switched on, for its owner's turn there; None when
    nothing (or no source is registered): a turn without tools, and no query
    (the owner is read only for a turn with tools)."""
    choices = conversation.tool_choices if conversation.tool_choices else {}
    sources = choices.get("sources") if isinstance(choices, dict) else None
    if not isinstance(sources, dict) or not any(v is True for v in sources.values()):
        return None
    if not has_sources():
        return None
    tools = choices.get("tools")
    tools = tools if isinstance(tools, dict) else {}
    on = frozenset(name for name, value in sources.items() if value is True)
    return Wanted(
        conversation.owner, on, {k: v for k, v in tools.items() if isinstance(v, bool)}
    )


async def resolve(wanted: Wanted) -> Toolbox:
    """The tools of what was switched on, as the sources offer them now (a
    source that offers nothing now says why: `Toolbox.notices`)."""
    chosen = []
    for offer in await _offers(wanted.user, wanted.sources):
        if offer.id not in wanted.sources:
            continue
        specs = [
            s for s in offer.specs if wanted.tools.get(f"{s.source}/{s.tool}", True)
        ]
        chosen.append(
            Offer(offer.id, offer.title, offer.source, specs, offer.unavailable)
        )
    return Toolbox.of(chosen)


async def _offers(user: Any, sources: Collection[str] | None) -> list[Offer]:
    """What every provider offers, asked together."""
    _load()
    named = list(_providers.items())

    async def ask(name: str, provider: Provider) -> list[Offer]:
        try:
            return list(await provider(user, sources))
        except Exception:
            logger.exception("tool source %r failed: its tools are not offered", name)
            return []

    found = await asyncio.gather(*(ask(name, provider) for name, provider in named))
    return [offer for offers in found for offer in offers]


def _load() -> None:
    """Import the modules that register the site's sources, once."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in getattr(settings, "TOOL_SOURCE_MODULES", SOURCE_MODULES):
        try:
            importlib.import_module(module)
        except Exception:
            logger.exception("tool source module %r could not be imported", module)
