"""The tools of one turn, from every source a site has: the registry the
sources plug into, and what the engine asks of it (`tools_for`).

A source of tools (MCP servers, `chat.tools.mcp`; web search, `chat.tools.web`)
registers a provider once, as its module is imported:

    toolbox.register("web", offers_for)

and lists that module in `SOURCE_MODULES` below (or a site's setting
`TOOL_SOURCE_MODULES`), which this module imports the first time it is
asked. A provider is called with a user and a conversation of theirs, in
the database thread while the turn is prepared
(`chat.live.engine.turn.beginning`), before the model server is asked; or
with no conversation for the composer's tools menu (`available`). It reads
what it needs from the database (who may use which server) and must not wait
on the network (list a server's tools ahead and keep them). It returns
`Offer`s: one per source (`ToolSpec.source`, e.g. `mcp:3`, `web`), its title,
the `ToolSource` and the `ToolSpec`s it runs. A provider that fails costs the
turn its tools, not the turn: it is logged and skipped.

Of what the providers offer, a turn gets what its conversation switched on
(`Conversation.tool_choices`, the tools menu's: a source not named is off, a
tool not named follows its source).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable, Sequence
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


Provider = Callable[[Any, "Conversation | None"], Iterable[Offer]]

# The modules that register the site's sources when imported.
SOURCE_MODULES: tuple[str, ...] = ()

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
        return cls(tuple(specs), sources)


NO_TOOLS = Toolbox()


def has_sources() -> bool:
    """Whether any source of tools is registered (else a turn asks none)."""
    _load()
    return bool(_providers)


def available(user: Any) -> list[Offer]:
    """Every source of tools `user` may switch on (the tools menu)."""
    return _offers(user, None)


def tools_for(user: Any, conversation: Conversation) -> Toolbox:
    """The tools `user` may have the model call in `conversation` and switched
    on there (in the database thread). Nothing registered, or nothing on: no
    tools (and no query but the providers')."""
    choices = conversation.tool_choices if conversation.tool_choices else {}
    sources = choices.get("sources") if isinstance(choices, dict) else None
    if not has_sources() or not isinstance(sources, dict) or not any(sources.values()):
        return NO_TOOLS
    tools = choices.get("tools")
    tools = tools if isinstance(tools, dict) else {}
    chosen = []
    for offer in _offers(user, conversation):
        if sources.get(offer.id) is not True:
            continue
        specs = [s for s in offer.specs if tools.get(f"{s.source}/{s.tool}", True)]
        chosen.append(Offer(offer.id, offer.title, offer.source, specs))
    return Toolbox.of(chosen)


def _offers(user: Any, conversation: Conversation | None) -> list[Offer]:
    _load()
    offers: list[Offer] = []
    for name, provider in list(_providers.items()):
        try:
            offers.extend(provider(user, conversation))
        except Exception:
            logger.exception("tool source %r failed: its tools are not offered", name)
    return offers


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
