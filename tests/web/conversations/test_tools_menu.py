"""The composer's tools menu: shown when tool sources are offered, saved on the
conversation at each change, by its owner only, with a CSRF token; choices of
sources not offered are kept and never added."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Conversation
from chat.web.conversations import tools_menu
from chat.web.conversations.tools_menu import SourceOffer, ToolOffer

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
OFFERED = [
    SourceOffer(
        "mcp:1",
        "Everything",
        [ToolOffer("echo", "Echo", "Says it back"), ToolOffer("add", "")],
    ),
    SourceOffer("web", "Web search", [ToolOffer("search", "Search")]),
]


@pytest.fixture
def offered(monkeypatch):
    # The menu's list is tools_menu.available's; the view asks it at each
    # request (the real sources': tests/web/conversations/test_tools_sources.py).
    monkeypatch.setattr(tools_menu, "available", lambda user: OFFERED)
    return OFFERED


def url(conversation):
    return reverse("set_tools", args=[conversation.pk])


def test_without_sources_there_is_no_menu(alice_client, own, monkeypatch):
    monkeypatch.setattr(tools_menu, "available", lambda user: [])
    page = alice_client.get(own.get_absolute_url()).content.decode()
    assert 'id="tools-menu"' not in page


def test_the_menu_lists_the_sources_and_their_tools_off_at_first(
    alice_client, own, offered
):
    page = alice_client.get(own.get_absolute_url()).content.decode()
    assert 'id="tools-menu"' in page
    assert 'value="mcp:1"' in page and 'value="mcp:1/echo"' in page
    assert 'title="Says it back"' in page
    assert "> add</label>" in page  # a tool without a title shows its name
    # Sources are off until switched on; their tools follow them (greyed).
    assert 'value="mcp:1">' in page and 'value="web">' in page
    assert 'value="mcp:1/echo" checked disabled>' in page


def test_switching_saves_the_choices_and_shows_them(alice_client, own, offered):
    before = own.updated_at
    response = alice_client.post(
        url(own), {"source": ["mcp:1"], "tool": ["mcp:1/add"]}, **HTMX
    )
    assert response.status_code == 200
    own.refresh_from_db()
    assert own.tool_choices == {
        "sources": {"mcp:1": True, "web": False},
        "tools": {"mcp:1/echo": False, "mcp:1/add": True},
    }
    assert own.updated_at == before  # no activity: the sidebar keeps its order
    html = response.content.decode()
    assert 'id="tools-menu" open>' in html
    assert 'value="mcp:1/add" checked' in html
    assert 'value="mcp:1/echo">' in html
    assert 'value="web">' in html and 'value="web/search" checked disabled>' in html


def test_a_source_switched_on_from_the_page_has_its_tools_on(
    alice_client, own, offered
):
    # The page's boxes of an off source are disabled: switching it on sends
    # none of its tools, which then follow it (on), not taken for unchecked.
    alice_client.post(url(own), {"source": ["mcp:1"]}, **HTMX)
    own.refresh_from_db()
    assert own.tool_choices == {"sources": {"mcp:1": True, "web": False}, "tools": {}}
    alice_client.post(url(own), {"source": ["mcp:1"], "tool": ["mcp:1/add"]}, **HTMX)
    own.refresh_from_db()
    assert own.tool_choices["tools"] == {"mcp:1/echo": False, "mcp:1/add": True}


def test_an_off_sources_tools_keep_their_choices(alice_client, own, offered):
    alice_client.post(url(own), {"source": ["mcp:1"], "tool": ["mcp:1/add"]}, **HTMX)
    alice_client.post(url(own), {}, **HTMX)  # everything off
    own.refresh_from_db()
    assert own.tool_choices["sources"] == {"mcp:1": False, "web": False}
    assert own.tool_choices["tools"] == {"mcp:1/echo": False, "mcp:1/add": True}


def test_unknown_sources_and_tools_are_not_stored_and_old_ones_are_kept(
    alice_client, own, offered
):
    own.tool_choices = {"sources": {"mcp:9": True}, "tools": {"mcp:9/x": False}}
    own.save()
    alice_client.post(
        url(own),
        {"source": ["mcp:1", "mcp:2", "x" * 500], "tool": ["mcp:1/nope", "mcp:2/a"]},
        **HTMX,
    )
    own.refresh_from_db()
    assert own.tool_choices == {
        "sources": {"mcp:9": True, "mcp:1": True, "web": False},
        # mcp:1 was just switched on and none of its own tools was sent:
        # they follow it (test_a_source_switched_on_from_the_page_...).
        "tools": {"mcp:9/x": False},
    }


def test_stored_garbage_is_read_as_no_choices(alice_client, own, offered):
    own.tool_choices = ["not", "a", "dict"]
    own.save()
    page = alice_client.get(own.get_absolute_url())
    assert page.status_code == 200
    own.tool_choices = {"sources": {"web": "yes"}, "tools": 3}
    own.save()
    alice_client.post(url(own), {"source": ["web"], "tool": ["web/search"]}, **HTMX)
    own.refresh_from_db()
    assert own.tool_choices == {
        "sources": {"mcp:1": False, "web": True},
        "tools": {"web/search": True},
    }


def test_without_htmx_the_change_is_saved_and_the_page_shown_again(
    alice_client, own, offered
):
    response = alice_client.post(url(own), {"source": ["web"]})
    assert response.status_code == 302 and response.url == own.get_absolute_url()
    own.refresh_from_db()
    assert own.tool_choices["sources"]["web"] is True


def test_only_the_owner_may_switch(client, bob, own, offered):
    client.force_login(bob)
    response = client.post(url(own), {"source": ["web"]}, **HTMX)
    assert response.status_code == 404
    own.refresh_from_db()
    assert own.tool_choices == {}


def test_anonymous_visitors_are_sent_to_sign_in(client, own, offered):
    response = client.post(url(own), {"source": ["web"]})
    assert response.status_code == 302 and reverse("login") in response.url
    assert Conversation.objects.get().tool_choices == {}


def test_only_a_post_saves(alice_client, own, offered):
    assert alice_client.get(url(own), {"source": ["web"]}).status_code == 405


def test_saving_needs_a_csrf_token(alice, own, offered):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(url(own), {"source": ["web"]}, **HTMX)
    assert response.status_code == 403
    own.refresh_from_db()
    assert own.tool_choices == {}
    token = client.get(own.get_absolute_url()).cookies["csrftoken"].value
    response = client.post(
        url(own), {"source": ["web"]}, HTTP_X_CSRFTOKEN=token, **HTMX
    )
    assert response.status_code == 200
    own.refresh_from_db()
    assert own.tool_choices["sources"]["web"] is True
