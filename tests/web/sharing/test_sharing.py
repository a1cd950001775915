"""Shared links over HTTP: the owner's dialog and list, the viewer's page."""

from __future__ import annotations

import re
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Message, ShareLink, SiteDefaults, Team
from tests.web.sharing.links import create, share

pytestmark = pytest.mark.django_db


def test_the_owner_creates_a_link_and_sees_its_url_once(alice_client, talk):
    assert alice_client.get(reverse("share_dialog", args=[talk.pk])).status_code == 200
    response = create(alice_client, talk, mode="live", include_thinking="on")
    assert response.status_code == 200
    link = ShareLink.objects.get()
    assert link.is_live and link.include_thinking and link.created_by == talk.owner
    assert timedelta(days=6) < link.expires_at - timezone.now() <= timedelta(days=7)
    url = re.search(r'value="(http://testserver/s/[^"]+/)"', response.content.decode())
    assert url and ShareLink.objects.by_token(url[1].split("/")[-2]).get() == link
    again = alice_client.get(reverse("share_dialog", args=[talk.pk])).content.decode()
    assert url[1] not in again and link.token_hint in again


@pytest.mark.parametrize(
    ("expiry", "expected"),
    [("never", None), ("1d", timedelta(days=1)), ("30d", timedelta(days=30))],
)
def test_expiry_choices(alice_client, talk, expiry, expected):
    create(alice_client, talk, expiry=expiry)
    link = ShareLink.objects.get()
    if expected is None:
        assert link.expires_at is None
    else:
        assert abs(link.expires_at - timezone.now() - expected) < timedelta(minutes=1)


def test_a_custom_expiry_must_be_in_the_future(alice_client, talk):
    past = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    response = create(alice_client, talk, expiry="custom", expires_on=past)
    assert response.status_code == 422
    assert "Pick a moment in the future." in response.content.decode()
    response = create(alice_client, talk, expiry="custom")
    assert "Pick the date the link expires." in response.content.decode()
    assert not ShareLink.objects.exists()
    future = (timezone.now() + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    assert (
        create(alice_client, talk, expiry="custom", expires_on=future).status_code
        == 200
    )
    assert ShareLink.objects.get().expires_at > timezone.now() + timedelta(days=2)


def test_only_the_owner_creates_updates_or_revokes(bob_client, talk):
    assert bob_client.get(reverse("share_dialog", args=[talk.pk])).status_code == 404
    assert create(bob_client, talk).status_code == 404
    assert not ShareLink.objects.exists()
    link, _ = ShareLink.create_for(talk)
    upto = link.snapshot_upto
    talk.messages.create(role="user", content="More")
    for name in ("update_share_link", "revoke_share_link"):
        assert bob_client.post(reverse(name, args=[link.pk])).status_code == 404
    link.refresh_from_db()
    assert link.is_active and link.snapshot_upto == upto
    assert ShareLink.objects.get() == link


def test_anonymous_owners_actions_go_to_sign_in(client, talk):
    link, _ = ShareLink.create_for(talk)
    response = client.post(reverse("revoke_share_link", args=[link.pk]))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    link.refresh_from_db()
    assert link.is_active


def test_every_share_post_needs_a_csrf_token(alice, talk):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    link, _ = ShareLink.create_for(talk)
    team = Team.objects.create(name="T")
    team.members.add(alice)
    posts = [
        (
            reverse("create_share_link", args=[talk.pk]),
            {"mode": "live", "expiry": "never"},
        ),
        (reverse("update_share_link", args=[link.pk]), {}),
        (reverse("revoke_share_link", args=[link.pk]), {}),
        (reverse("share_with_team", args=[talk.pk]), {"team": team.pk, "shared": "1"}),
    ]
    for url, data in posts:
        assert client.post(url, data).status_code == 403, url
    link.refresh_from_db()
    assert link.is_active and ShareLink.objects.count() == 1
    assert not team.conversations.exists()


def test_update_moves_the_snapshot_point(alice_client, talk):
    token = share(talk)
    talk.messages.create(role="user", content="And a follow-up?")
    link = ShareLink.objects.get()
    assert "follow-up" not in Client().get(f"/s/{token}/").content.decode()
    response = alice_client.post(reverse("update_share_link", args=[link.pk]))
    assert response.status_code == 302 and response.url == reverse("my_links")
    assert "follow-up" in Client().get(f"/s/{token}/").content.decode()


def test_a_live_or_revoked_link_cannot_be_updated(alice_client, talk):
    live, _ = ShareLink.create_for(talk, mode=ShareLink.Mode.LIVE)
    response = alice_client.post(reverse("update_share_link", args=[live.pk]))
    assert response.status_code == 409
    gone, _ = ShareLink.create_for(talk)
    gone.revoke()
    assert (
        alice_client.post(reverse("update_share_link", args=[gone.pk])).status_code
        == 409
    )


def test_revoke_from_the_dialog_answers_with_the_dialog(alice_client, talk):
    link, token = ShareLink.create_for(talk)
    response = alice_client.post(
        reverse("revoke_share_link", args=[link.pk]),
        {"from": "dialog"},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert "Revoked" in response.content.decode()
    assert 'id="share-dialog-title"' in response.content.decode()
    assert Client().get(f"/s/{token}/").status_code == 410


def test_revoke_from_my_links_answers_with_the_row(alice_client, talk):
    link, _ = ShareLink.create_for(talk)
    response = alice_client.post(
        reverse("revoke_share_link", args=[link.pk]), headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert html.startswith("<tr") and 'data-status="revoked"' in html


def test_my_links_lists_mine_with_their_status(alice_client, bob, talk):
    ShareLink.create_for(talk, mode=ShareLink.Mode.LIVE)
    revoked, _ = ShareLink.create_for(talk)
    revoked.revoke()
    ShareLink.create_for(talk, expires_at=timezone.now() - timedelta(hours=1))
    ShareLink.create_for(Conversation.objects.create(owner=bob, title="Bob's secret"))
    html = alice_client.get(reverse("my_links")).content.decode()
    assert re.findall(r'data-status="(\w+)"', html) == ["expired", "revoked", "active"]
    assert "Bob&#x27;s secret" not in html and "Bob's secret" not in html
    assert html.count("Streams") == 3


def test_the_shared_page_needs_no_account_and_is_not_indexed(client, talk):
    token = share(talk)
    response = client.get(f"/s/{token}/")
    assert response.status_code == 200
    assert response["X-Robots-Tag"] == "noindex, nofollow"
    assert response["Cache-Control"] == "no-store"
    assert response["Referrer-Policy"] == "no-referrer"
    html = response.content.decode()
    assert '<meta name="robots" content="noindex, nofollow">' in html
    assert "What is a stream?" in html and "<strong>data</strong>" in html
    assert "Shared by Alice" in html
    assert 'id="composer' not in html  # read-only
    assert 'data-read-only="1"' in html and 'data-ws-path=""' in html


def test_the_shared_page_leaks_no_ids_and_no_other_names(bob, talk):
    team = Team.objects.create(name="Team")
    team.members.add(talk.owner, bob)
    token = share(talk, mode=ShareLink.Mode.LIVE)
    viewer = Client()
    viewer.force_login(bob)
    html = viewer.get(f"/s/{token}/").content.decode()
    ids = [talk.pk, *talk.messages.values_list("pk", flat=True)]
    assert ids and not [pk for pk in ids if str(pk) in html]
    assert 'id="message-1"' in html and 'id="message-2"' in html
    assert f"/s/{token}/messages/2/source/" in html
    assert f'data-ws-path="/ws/share/{token}/?seen=2"' in html
    for name in ("bob", "Bob", "alice", "alice@example.org"):
        assert name not in html


def test_thinking_is_shown_only_when_the_link_includes_it(client, talk):
    without = client.get(f"/s/{share(talk)}/").content.decode()
    assert "Secret reasoning" not in without
    with_it = client.get(f"/s/{share(talk, include_thinking=True)}/").content.decode()
    assert "Secret reasoning" in with_it


def test_revoked_and_expired_links_show_a_clear_gone_page(client, talk):
    link, token = ShareLink.create_for(talk)
    link.revoke()
    response = client.get(f"/s/{token}/")
    assert response.status_code == 410 and response["X-Robots-Tag"]
    assert "This link is no longer available" in response.content.decode()
    assert "Its owner revoked it." in response.content.decode()
    assert "What is a stream?" not in response.content.decode()

    past = timezone.now() - timedelta(minutes=1)
    _, token = ShareLink.create_for(talk, expires_at=past)
    response = client.get(f"/s/{token}/")
    assert response.status_code == 410 and "It expired on" in response.content.decode()
    source = client.get(reverse("shared_message_source", args=[token, 1]))
    assert source.status_code == 410


def test_an_unknown_token_is_a_404(client, talk):
    token = share(talk)
    assert client.get(f"/s/{token[:-1]}x/").status_code == 404
    assert client.get("/s/x/").status_code == 404


def test_sign_in_can_be_required_for_shared_links(client, bob_client, talk):
    settings = SiteDefaults.load()
    settings.share_requires_sign_in = True
    settings.save()
    token = share(talk)
    response = client.get(f"/s/{token}/")
    assert response.status_code == 302
    assert response.url == f"{reverse('login')}?next=/s/{token}/"
    assert bob_client.get(f"/s/{token}/").status_code == 200


def test_copying_from_a_shared_page_gets_the_markdown_by_ordinal(client, talk):
    token = share(talk)
    response = client.get(reverse("shared_message_source", args=[token, 2]))
    assert response.content.decode() == "A flow of **data**."
    assert response["X-Robots-Tag"]
    assert (
        client.get(reverse("shared_message_source", args=[token, 3])).status_code == 404
    )
    assert (
        client.get(reverse("shared_message_source", args=[token, 0])).status_code == 404
    )


def test_a_snapshot_never_shows_an_answer_being_written(client, talk):
    talk.messages.create(role="user", content="Next?")
    talk.messages.create(
        role="assistant", content="Half an ans", status=Message.Status.STREAMING
    )
    html = client.get(f"/s/{share(talk)}/").content.decode()
    assert "Next?" in html and "Half an ans" not in html
    assert (
        re.findall(r'data-message-id="\d+" data-status="(\w+)"', html) == ["done"] * 3
    )


def test_the_conversation_page_offers_the_share_dialog(alice_client, talk):
    html = alice_client.get(talk.get_absolute_url()).content.decode()
    assert f'hx-get="{reverse("share_dialog", args=[talk.pk])}"' in html


def test_sharing_with_a_team_needs_membership(alice, alice_client, talk):
    mine = Team.objects.create(name="Mine")
    mine.members.add(alice)
    other = Team.objects.create(name="Other")
    url = reverse("share_with_team", args=[talk.pk])
    assert alice_client.post(url, {"team": other.pk, "shared": "1"}).status_code == 404
    assert alice_client.post(url, {"team": "x", "shared": "1"}).status_code == 404
    assert alice_client.post(url, {"team": mine.pk, "shared": "1"}).status_code == 302
    assert list(mine.conversations.all()) == [talk]
    response = alice_client.post(
        url, {"team": mine.pk, "shared": "0"}, headers={"HX-Request": "true"}
    )
    assert (
        response.status_code == 200 and "Mine can read it" in response.content.decode()
    )
    assert not mine.conversations.exists() and not other.conversations.exists()


def test_teams_and_links_are_managed_in_the_admin(admin_client, alice, talk):
    team = Team.objects.create(name="Research")
    team.members.add(alice)
    link, _ = ShareLink.create_for(talk)
    for url in (
        reverse("admin:chat_team_add"),
        reverse("admin:chat_team_change", args=[team.pk]),
        reverse("admin:chat_sharelink_changelist"),
        reverse("admin:chat_sharelink_change", args=[link.pk]),
    ):
        assert admin_client.get(url).status_code == 200, url
    # Members are added in the memberships inline, with their role.
    form = {
        "name": "Ops",
        "quota_period": "day",
        "team_output_tokens": 0,
        "team_answers": 0,
        "member_output_tokens": 0,
        "member_answers": 0,
        "memberships-TOTAL_FORMS": 1,
        "memberships-INITIAL_FORMS": 0,
        "memberships-0-user": alice.pk,
        "memberships-0-role": "admin",
        # The team's web sites (a stacked inline), left empty.
        "web_sites-TOTAL_FORMS": 0,
        "web_sites-INITIAL_FORMS": 0,
    }
    response = admin_client.post(reverse("admin:chat_team_add"), form)
    assert response.status_code == 302
    ops = Team.objects.get(name="Ops")
    assert list(ops.members.all()) == [alice]
    assert list(ops.admins()) == [alice]


def test_revoking_holds_when_the_channel_layer_is_away(
    alice_client, talk, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    class Away:
        async def group_send(self, group, message):
            raise ConnectionError("redis is away")

    monkeypatch.setattr("chat.models.sharing.get_channel_layer", Away)
    link, token = ShareLink.create_for(talk, mode=ShareLink.Mode.LIVE)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = alice_client.post(reverse("revoke_share_link", args=[link.pk]))
    assert response.status_code == 302 and callbacks
    link.refresh_from_db()
    assert link.status == "revoked"
    assert Client().get(f"/s/{token}/").status_code == 410
    assert "closing the sockets of" in caplog.text


def test_model_output_is_inert_on_the_shared_page(client, talk):
    hostile = (
        '<script>alert(1)</script> <img src=x onerror="alert(2)"> '
        "[a](javascript:alert(3))"
    )
    talk.messages.create(role="user", content=hostile)
    talk.messages.create(role="assistant", content=hostile, thinking=hostile)
    talk.title = "<script>alert(4)</script>"
    talk.save()
    html = client.get(f"/s/{share(talk, include_thinking=True)}/").content.decode()
    tags = Tags()
    tags.feed(html)
    scripts = [attrs for tag, attrs in tags.seen if tag == "script"]
    assert all("src" in attrs or attrs.get("type") == "module" for attrs in scripts)
    assert not [(t, a) for t, a in tags.seen for name in a if name.startswith("on")]
    hrefs = [a.get("href") or "" for t, a in tags.seen if t == "a"]
    assert not [h for h in hrefs if h.lower().startswith("javascript:")]
    assert html.count("alert(1)") == 3  # shown as text: question, answer, thinking


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.seen.append((tag, dict(attrs)))


def test_a_bad_form_is_answered_with_its_errors(alice_client, talk):
    response = create(alice_client, talk, mode="everyone", expiry="forever")
    assert response.status_code == 422
    html = response.content.decode()
    assert html.count("Select a valid choice.") == 2
    assert not ShareLink.objects.exists()
