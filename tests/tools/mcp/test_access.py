"""Who may use an MCP server's tools (the rule model profiles have,
chat.models.offering), users' credentials (encrypted, sent as the server's
header), and a user naming a server or tool they may not use."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from chat.models import Membership, ModelProfile, Team, ToolCredential, ToolServer
from chat.tools.calls import ToolCall
from chat.tools.mcp import reachable_by, tools_for

pytestmark = [pytest.mark.timeout(60)]


@pytest.fixture
def team(alice, db) -> Team:
    team = Team.objects.create(name="docs")
    Membership.objects.create(team=team, user=alice)
    return team


def http_server(slug: str, url: str = "http://127.0.0.1:1/mcp", **fields) -> ToolServer:
    return ToolServer.objects.create(name=slug.title(), slug=slug, url=url, **fields)


@pytest.mark.django_db
def test_a_server_for_a_team_is_offered_to_its_members_only(team, alice, bob) -> None:
    everyone = http_server("everyone")
    docs = http_server("docs")
    docs.teams.add(team)
    http_server("off", enabled=False)
    assert [r.config.slug for r in reachable_by(alice)] == ["docs", "everyone"]
    assert [r.config.slug for r in reachable_by(bob)] == ["everyone"]
    assert reachable_by(bob, ["docs"]) == []
    # the same rule as the model profiles' (one rule, chat.models.offering)
    profile = ModelProfile.objects.create(tag="m", base_url="http://127.0.0.1:1")
    profile.teams.add(team)
    assert list(ModelProfile.objects.usable_by(bob)) == []
    assert list(ModelProfile.objects.usable_by(alice)) == [profile]
    assert everyone.pk in ToolServer.objects.usable_by(bob).values_list("pk", flat=True)


@pytest.mark.django_db
def test_a_credential_is_encrypted_and_sent_in_the_servers_header(alice, bob) -> None:
    server = http_server(
        "ours",
        headers={"X-Team": "docs"},
        credential_header="Authorization",
        credential_prefix="Bearer ",
    )
    ToolCredential.store(alice, server, "  s3cret-token ")
    stored = ToolCredential.objects.get(user=alice, server=server)
    assert "s3cret" not in stored.encrypted
    assert stored.value() == "s3cret-token"
    (reached,) = reachable_by(alice)
    assert reached.headers == {"X-Team": "docs", "Authorization": "Bearer s3cret-token"}
    assert reachable_by(bob)[0].headers == {"X-Team": "docs"}
    # a new secret key: the old value cannot be read, and is not sent
    with override_settings(SECRET_KEY="another-secret-key-" * 3):
        assert stored.value() is None
        assert reachable_by(alice)[0].headers == {"X-Team": "docs"}
    # a rotated one, kept as a fallback, still opens it
    old = "x" * 50
    with override_settings(SECRET_KEY=old):
        ToolCredential.store(alice, server, "rotated")
    with override_settings(SECRET_KEY="new" * 20, SECRET_KEY_FALLBACKS=[old]):
        assert (
            ToolCredential.objects.get(user=alice, server=server).value() == "rotated"
        )
    ToolCredential.store(alice, server, "")
    assert not ToolCredential.objects.filter(user=alice).exists()


@pytest.mark.django_db(transaction=True)
async def test_a_user_without_access_gets_no_tools_and_cannot_run_them(
    team, alice, bob, our_http
) -> None:
    server = await ToolServer.objects.acreate(name="Docs", slug="docs", url=our_http)
    await server.teams.aadd(team)
    alices = await tools_for(alice, servers=["docs"])
    assert "docs__echo" in {spec.name for spec in alices.specs}
    bobs = await tools_for(bob, servers=["docs"])
    assert bobs.specs == [] and bobs.unavailable == {}
    spec = next(spec for spec in alices.specs if spec.name == "docs__echo")
    call = ToolCall("c1", spec.name, json.dumps({"text": "hi"}))
    outcome = await bobs.run(spec, call, deadline=10)
    assert outcome.error == "there is no tool named 'docs__echo' here"
    assert (await alices.run(spec, call, deadline=10)).text == "hi"
    # only the tools a conversation turned on
    only = await tools_for(alice, tools=["docs__add"])
    assert [spec.name for spec in only.specs] == ["docs__add"]


@pytest.mark.django_db
def test_the_server_form_checks_its_transport() -> None:
    from django.core.exceptions import ValidationError

    bad = ToolServer(name="x", slug="x", url="ftp://x", headers={"a b": "1"})
    with pytest.raises(ValidationError) as raised:
        bad.full_clean()
    assert set(raised.value.message_dict) == {"url", "headers"}
    stdio = ToolServer(name="y", slug="y", transport="stdio", args="npx", env=[])
    with pytest.raises(ValidationError) as raised:
        stdio.full_clean()
    assert set(raised.value.message_dict) == {"command", "args", "env"}
