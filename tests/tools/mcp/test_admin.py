"""MCP servers in the admin (chat.admin.tool_servers): the action that
connects and lists a server's tools, or says why it could not."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from chat.models import ToolServer

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]


def test_the_admin_lists_a_servers_tools_or_says_why_not(
    admin_client, our_http
) -> None:
    ours = ToolServer.objects.create(name="Ours", slug="ours", url=our_http)
    down = ToolServer.objects.create(
        name="Down", slug="down", url="http://127.0.0.1:1/mcp", timeout=5
    )
    response = admin_client.post(
        reverse("admin:chat_toolserver_changelist"),
        {"action": "list_tools", "_selected_action": [ours.pk, down.pk]},
    )
    assert response.status_code == 302
    said = {str(message) for message in get_messages(response.wsgi_request)}
    (answered,) = [text for text in said if text.startswith("Ours answers:")]
    assert "ours__echo" in answered and "ours__add" in answered
    assert any(
        text.startswith("Down: the server could not be reached") for text in said
    )
    page = admin_client.get(reverse("admin:chat_toolserver_change", args=[ours.pk]))
    assert page.status_code == 200
