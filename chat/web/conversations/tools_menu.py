"""The composer's tools menu: the tool sources (MCP servers, web search) the
owner may use, and which of them and of their single tools are on in this
conversation, saved on it (`Conversation.tool_choices`, read by the engine):

    {"sources": {"<source>": true | false}, "tools": {"<source>/<tool>": true | false}}

A source not named is off; a tool not named follows its source. Choices for a
source the user cannot use now (taken from their team, its server removed) are
kept, and never offered or added by a request."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from chat.http.requests import SignedInRequest
from chat.models import Conversation
from chat.tools import toolbox


@dataclass(frozen=True, slots=True)
class ToolOffer:
    name: str  # the tool's own name at its source (ToolSpec.tool)
    title: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class SourceOffer:
    id: str  # ToolSpec.source: "mcp:<server pk>", "web"
    title: str
    tools: list[ToolOffer] = field(default_factory=list)


def available(user: Any) -> list[SourceOffer]:
    """The tool sources `user` may switch on (`chat.tools.toolbox`: an MCP
    server's tools are listed over the network, kept a while; a server that
    does not answer soon is shown without its tools)."""
    offers = _listed(user)
    return [
        SourceOffer(
            offer.id,
            offer.title,
            [
                ToolOffer(spec.tool, spec.title, spec.description)
                for spec in offer.specs
            ],
        )
        for offer in offers
    ]


def _listed(user: Any) -> list[toolbox.Offer]:
    """`toolbox.available(user)` from this sync view. Where this thread also
    runs an event loop (a site process forked from one, as the suite's live
    server is), `async_to_sync` refuses: the listing runs in a thread of its
    own there."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return async_to_sync(toolbox.available)(user)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, toolbox.available(user)).result()


@dataclass(frozen=True, slots=True)
class MenuTool:
    key: str  # "<source>/<tool>", the checkbox's value
    title: str
    description: str
    on: bool


@dataclass(frozen=True, slots=True)
class MenuSource:
    id: str
    title: str
    on: bool
    tools: list[MenuTool]


def _choices(conversation: Conversation) -> tuple[dict[str, bool], dict[str, bool]]:
    # Stored JSON, written only by `set_tools`; read defensively all the same.
    raw = (
        conversation.tool_choices if isinstance(conversation.tool_choices, dict) else {}
    )
    sources, tools = raw.get("sources"), raw.get("tools")
    return (
        {k: v for k, v in sources.items() if isinstance(v, bool)}
        if isinstance(sources, dict)
        else {},
        {k: v for k, v in tools.items() if isinstance(v, bool)}
        if isinstance(tools, dict)
        else {},
    )


def menu(conversation: Conversation, offered: list[SourceOffer]) -> list[MenuSource]:
    """What the menu shows: every source offered, on or off here."""
    sources, tools = _choices(conversation)
    shown = []
    for source in offered:
        on = sources.get(source.id, False)
        shown.append(
            MenuSource(
                id=source.id,
                title=source.title,
                on=on,
                tools=[
                    MenuTool(
                        key=(key := f"{source.id}/{tool.name}"),
                        title=tool.title or tool.name,
                        description=tool.description,
                        on=tools.get(key, True),
                    )
                    for tool in source.tools
                ],
            )
        )
    return shown


def menu_for(user: Any, conversation: Conversation) -> list[MenuSource]:
    return menu(conversation, available(user))


def choose(
    conversation: Conversation,
    offered: list[SourceOffer],
    sources_on: set[str],
    tools_on: set[str],
) -> None:
    """Store the menu's state: each offered source on if checked; the tools of
    a source that is on, each as checked (an off source's tools keep theirs,
    and so do those of a source just switched on when none of them was sent:
    the page's boxes of an off source are disabled, so never sent)."""
    sources, tools = _choices(conversation)
    for source in offered:
        was_on = sources.get(source.id, False)
        sources[source.id] = source.id in sources_on
        if source.id not in sources_on:
            continue
        keys = {f"{source.id}/{tool.name}" for tool in source.tools}
        if not was_on and not keys & tools_on:
            continue
        for tool in source.tools:
            key = f"{source.id}/{tool.name}"
            tools[key] = key in tools_on
    conversation.tool_choices = {"sources": sources, "tools": tools}
    # Not `updated_at`: a switch is no activity (the sidebar keeps its order).
    conversation.save(update_fields=["tool_choices"])


@login_required
@require_POST
def set_tools(request: SignedInRequest, pk: int) -> HttpResponse:
    # Someone else's conversation is a 404, as everywhere (views._owned).
    current = get_object_or_404(Conversation, pk=pk, owner=request.user)
    offered = available(request.user)
    choose(
        current,
        offered,
        set(request.POST.getlist("source")),
        set(request.POST.getlist("tool")),
    )
    if not request.htmx:
        return redirect(current)
    context = {
        "conversation": current,
        "tool_menu": menu(current, offered),
        "tools_menu_open": True,
    }
    return render(request, "chat/_tools_menu.html", context)
