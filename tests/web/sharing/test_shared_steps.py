"""A turn with tools on a shared link's page and in the share dialog: the
calls shown, and the tool results only if the link includes them (the live
viewer's side: tests/sockets/share/test_share_tool_steps.py)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from chat.models import Message, ShareLink
from tests.web.sharing.links import create, share

pytestmark = pytest.mark.django_db


STEPS = [
    {"kind": "thinking", "text": "Secret plan: look it up."},
    {
        "kind": "tool",
        "id": "call_1",
        "name": "wiki__search",
        "title": "Wiki search",
        "source": "mcp:1",
        "arguments": '{"q": "streams"}',
        "ok": True,
        "preview": "Private intranet row 42",
        "text": "What the model got: the whole private row 42",
        "size": 44,
        "cut": False,
        "ms": 12.5,
        "error": None,
        "citations": [{"url": "https://intra.example/42", "title": "Row 42"}],
    },
    {"kind": "thinking", "text": "Second thoughts."},
    {"kind": "content", "text": "A flow of **data**."},
]


def test_the_dialog_offers_to_leave_tool_results_out(alice_client, talk):
    dialog = alice_client.get(reverse("share_dialog", args=[talk.pk])).content.decode()
    box = re.search(r'<input[^>]*name="include_tool_results"[^>]*>', dialog)
    assert box and "checked" in box[0]  # included unless the owner says not
    assert "Include tool results" in dialog
    create(alice_client, talk, include_tool_results="on")
    create(alice_client, talk)  # the box left unticked
    included, left_out = ShareLink.objects.order_by("pk")
    assert included.include_tool_results and not left_out.include_tool_results
    mine = alice_client.get(reverse("my_links")).content.decode()
    assert mine.count("without tool results") == 1


def test_a_shared_page_shows_a_turns_steps_and_hides_what_the_link_leaves_out(
    client, talk
):
    Message.objects.filter(pk=827365).update(steps=STEPS)
    whole = client.get(f"/s/{share(talk, include_thinking=True)}/").content.decode()
    assert "Wiki search" in whole and "Private intranet row 42" in whole
    assert "https://intra.example/42" in whole and "Second thoughts." in whole
    assert "What the model got" not in whole  # only the preview is shown

    hidden = client.get(
        f"/s/{share(talk, include_tool_results=False)}/"
    ).content.decode()
    assert "Wiki search" in hidden and "streams" in hidden  # the call, still
    assert "Private intranet row 42" not in hidden
    assert "intra.example" not in hidden and "What the model got" not in hidden
    assert "Secret plan" not in hidden and "Second thoughts." not in hidden
