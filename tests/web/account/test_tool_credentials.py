"""The user page's credentials for tool servers
(chat.web.account.tool_credentials, templates/chat/_tool_credentials.html):
listed for the servers the user may use that take one, set or replaced (the
value never shown back), cleared, audited without the value; refused for a
server the user may not use; CSRF and both languages."""

from __future__ import annotations

import html

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from chat.models import AuditEvent, Membership, Team, ToolCredential, ToolServer

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
SECRET = "s3cret-token-value"


def server(slug: str, **fields: object) -> ToolServer:
    fields.setdefault("credential_header", "Authorization")
    return ToolServer.objects.create(
        name=slug.title(), slug=slug, url="http://127.0.0.1:1/mcp", **fields
    )


def text(response) -> str:
    return html.unescape(response.content.decode())


def section(response) -> str:
    return text(response).split('id="tool-credentials"')[1].split("</section>")[0]


def set_url(each: ToolServer) -> str:
    return reverse("set_tool_credential", args=[each.pk])


def clear_url(each: ToolServer) -> str:
    return reverse("clear_tool_credential", args=[each.pk])


def test_the_page_lists_the_servers_that_take_a_credential(alice, alice_client):
    wiki = server("wiki")
    server("plain", credential_header="")
    server("off", enabled=False)
    elsewhere = server("theirs")
    elsewhere.teams.add(Team.objects.create(name="others"))
    ToolCredential.store(alice, wiki, SECRET)
    page = section(alice_client.get(reverse("account")))
    assert "Wiki" in page and 'data-set="1"' in page
    for hidden in ("Plain", "Off", "Theirs"):
        assert hidden not in page
    assert SECRET not in text(alice_client.get(reverse("account")))
    assert 'type="password"' in page


def test_no_section_without_such_servers(alice_client):
    server("plain", credential_header="")
    assert 'id="tool-credentials"' not in text(alice_client.get(reverse("account")))


def test_setting_replacing_and_clearing_are_audited_without_the_value(
    alice, alice_client
):
    wiki = server("wiki")
    answer = alice_client.post(set_url(wiki), {"value": SECRET}, **HTMX)
    assert answer.status_code == 200
    assert "Your credential for Wiki is set." in section(answer)
    assert 'data-set="1"' in section(answer) and SECRET not in text(answer)
    assert ToolCredential.objects.get(user=alice, server=wiki).value() == SECRET
    alice_client.post(set_url(wiki), {"value": "another"}, **HTMX)
    assert ToolCredential.objects.get(user=alice, server=wiki).value() == "another"
    cleared = alice_client.post(clear_url(wiki), **HTMX)
    assert 'data-set="0"' in section(cleared)
    assert not ToolCredential.objects.filter(user=alice).exists()
    events = AuditEvent.objects.filter(subject=alice, kind__startswith="tool_")
    events = events.order_by("pk")
    assert [event.kind for event in events] == [
        AuditEvent.Kind.TOOL_SECRET_SET,
        AuditEvent.Kind.TOOL_SECRET_SET,
        AuditEvent.Kind.TOOL_SECRET_CLEARED,
    ]
    assert all(event.detail == {"server": "wiki"} for event in events)
    assert all(SECRET not in str(event.detail) for event in events)


def test_without_htmx_the_page_comes_back_with_the_notice(alice, alice_client):
    wiki = server("wiki")
    answer = alice_client.post(set_url(wiki), {"value": SECRET}, follow=True)
    assert "Your credential for Wiki is set." in text(answer)


def test_a_blank_value_is_refused_and_stores_nothing(alice, alice_client):
    wiki = server("wiki")
    answer = alice_client.post(set_url(wiki), {"value": "   "}, **HTMX)
    assert answer.status_code == 422
    assert 'role="alert"' in section(answer)
    assert not ToolCredential.objects.exists()
    assert not AuditEvent.objects.filter(kind=AuditEvent.Kind.TOOL_SECRET_SET).exists()


def test_a_server_the_user_may_not_use_is_a_404(alice, bob, alice_client):
    theirs = server("theirs")
    team = Team.objects.create(name="others")
    Membership.objects.create(team=team, user=bob)
    theirs.teams.add(team)
    plain = server("plain", credential_header="")
    for each in (theirs, plain):
        assert alice_client.post(set_url(each), {"value": SECRET}).status_code == 404
        assert alice_client.post(clear_url(each)).status_code == 404
    assert not ToolCredential.objects.exists()


def test_signed_out_and_without_a_csrf_token_it_is_refused(alice):
    wiki = server("wiki")
    assert Client().post(set_url(wiki), {"value": SECRET}).status_code == 302
    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(alice)
    assert guarded.post(set_url(wiki), {"value": SECRET}).status_code == 403
    assert not ToolCredential.objects.exists()


def test_the_section_speaks_chinese(alice, alice_client):
    server("wiki")
    with translation.override("zh-hans"):
        page = alice_client.get(reverse("account"), HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "工具凭据" in section(page) and "未设置" in section(page)
