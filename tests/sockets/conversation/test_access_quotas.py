"""The owner's socket refuses a turn whose model is forbidden to them
(`model_forbidden`) or over their quota (`quota_reached`): a clear error frame,
nothing stored, the model never asked, the socket kept."""

from __future__ import annotations

import pytest

from chat.models import Message, SiteDefaults, Team
from tests.support.communicators import connect, frames_until, send

pytestmark = pytest.mark.django_db(transaction=True)


async def refused_frame(communicator, frame: dict) -> dict:
    await communicator.send_json_to(frame)
    frames = await frames_until(communicator, "error", timeout=5)
    assert [f["type"] for f in frames] == ["error"]
    return frames[0]


SEND = {"type": "send", "content": "Hello there", "client_id": "c-1"}


async def limit_to_a_team(profile) -> None:
    team = await Team.objects.acreate(name="GPU")
    await profile.teams.aadd(team)


@pytest.mark.parametrize("frame", [SEND, {"type": "regenerate"}])
async def test_a_forbidden_model_is_refused_with_model_forbidden(
    alice, conversation, demo_profile, simulator, frame
):
    await limit_to_a_team(demo_profile)
    communicator = await connect(alice, conversation)
    error = await refused_frame(communicator, frame)
    await communicator.disconnect()
    assert error["code"] == "model_forbidden"
    assert error["message_id"] is None
    assert "not available to you" in error["detail"]
    assert not await Message.objects.aexists()
    assert not simulator.log


async def test_a_forbidden_model_is_not_preloaded(
    alice, conversation, demo_profile, simulator
):
    await limit_to_a_team(demo_profile)
    communicator = await connect(alice, conversation)
    await communicator.send_json_to({"type": "preload"})
    # The socket answers the next frame; the preload before it asked nothing.
    error = await refused_frame(communicator, SEND)
    await communicator.disconnect()
    assert error["code"] == "model_forbidden"
    assert not simulator.log


async def use_up_the_quota(conversation) -> None:
    site = await SiteDefaults.objects.aget_or_create(pk=1)
    site = site[0]
    site.user_answers = 1
    await site.asave()
    await conversation.messages.acreate(role="user", content="first")
    await conversation.messages.acreate(role="assistant", content="first answer")


@pytest.mark.parametrize("frame", [SEND, {"type": "regenerate"}])
async def test_over_quota_is_refused_with_quota_reached(
    alice, conversation, simulator, frame
):
    await use_up_the_quota(conversation)
    communicator = await connect(alice, conversation)
    error = await refused_frame(communicator, frame)
    assert error["code"] == "quota_reached"
    assert error["detail"] == (
        "Your quota is reached (1 of 1 answers); it resets at 00:00 UTC."
    )
    assert await Message.objects.acount() == 2
    assert not await Message.objects.filter(replaced=True).aexists()
    assert not simulator.log
    # The socket stays open and the conversation unclaimed: raising the quota
    # lets the next send through.
    site = await SiteDefaults.objects.aget(pk=1)
    site.user_answers = 0
    await site.asave()
    await send(communicator)
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()
    assert frames[-1]["status"] == "done"


async def test_over_quota_the_model_is_not_preloaded(alice, conversation, simulator):
    await use_up_the_quota(conversation)
    communicator = await connect(alice, conversation)
    await communicator.send_json_to({"type": "preload"})
    error = await refused_frame(communicator, SEND)
    await communicator.disconnect()
    assert error["code"] == "quota_reached"
    assert not simulator.log


async def test_a_model_limited_to_the_owners_team_answers(
    alice, conversation, demo_profile, simulator
):
    """Read with the conversation when a turn begins: the owner is on one of
    the model's teams."""
    await limit_to_a_team(demo_profile)
    team = await demo_profile.teams.aget()
    await team.memberships.acreate(user=alice)
    communicator = await connect(alice, conversation)
    await send(communicator)
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()
    assert frames[-1]["status"] == "done"
    assert simulator.log


@pytest.mark.parametrize("frame", [SEND, {"type": "regenerate"}])
async def test_over_a_teams_quota_is_refused_with_quota_reached(
    alice, conversation, simulator, frame
):
    """An owner on a team: its quotas count (its row is read, locked, only for
    an owner on some team)."""
    team = await Team.objects.acreate(name="GPU", team_answers=1)
    await team.memberships.acreate(user=alice)
    await conversation.messages.acreate(role="user", content="first")
    await conversation.messages.acreate(role="assistant", content="first answer")
    communicator = await connect(alice, conversation)
    error = await refused_frame(communicator, frame)
    await communicator.disconnect()
    assert error["code"] == "quota_reached"
    assert "GPU" in error["detail"]
    assert await Message.objects.acount() == 2
    assert not simulator.log
