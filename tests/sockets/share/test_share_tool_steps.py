"""A live link's viewer follows a turn with tools (the probe's tools,
tests/live/engine/turn/tools_source.py, called by the simulator): the call
and its result as they happen, and the stored answer's steps; without the
tool results when the link leaves them out."""

from __future__ import annotations

import re

import pytest
from channels.db import database_sync_to_async

from chat.models import ShareLink
from tests.live.engine.turn.tools_source import probe
from tests.support.communicators import connect, frames_until, open_viewer, send

pytestmark = pytest.mark.django_db(transaction=True)

__all__ = ["probe"]  # the fixture, used below


def previews(html: str) -> list[str]:
    return re.findall(r'<pre class="tool-preview">(.*?)</pre>', html, re.S)


@pytest.mark.parametrize("included", [True, False], ids=["results", "no-results"])
async def test_a_live_viewer_sees_the_steps_and_the_results_the_link_includes(
    alice, conversation, simulator, probe, included
):
    _, token = await database_sync_to_async(ShareLink.create_for)(
        conversation, mode=ShareLink.Mode.LIVE, include_tool_results=included
    )
    viewer = await open_viewer(token)
    await viewer.send_json_to({"type": "stop"})  # its answer: the socket is ready
    assert (await viewer.receive_json_from(timeout=5))["code"] == "read_only"
    owner = await connect(alice, conversation)
    await send(owner, "Please use echo to say hi")
    await frames_until(owner, "done")
    seen = await frames_until(viewer, "done")
    final = await viewer.receive_json_from(timeout=5)
    await owner.disconnect()
    await viewer.disconnect()

    kinds = [f["type"] for f in seen]
    assert "tool_call" in kinds and "round" in kinds
    [result] = [f for f in seen if f["type"] == "tool_result"]
    assert result["ok"] is True
    assert result["preview"] == ("probe says" if included else "")
    assert final["type"] == "message"
    html = final["message"]["html"]
    assert "Echo" in html  # the call is shown either way
    assert previews(html) == (["probe says"] if included else [""])
    tool = next(s for s in final["message"]["steps"] if s["kind"] == "tool")
    assert "text" not in tool  # what the model got stays on the server
    assert tool["preview"] == ("probe says" if included else "")
