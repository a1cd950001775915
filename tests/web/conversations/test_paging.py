"""Long conversations: pages show the newest messages, older ones a page at a time."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Message, SettingsChange, ShareLink, Team
from chat.models.paging import page_size
from tests.support.conversations import add_messages

pytestmark = pytest.mark.django_db

MANY = 5_000  # far more than a page; quick to make in bulk
WALKED = 260  # five pages and a part: walked back page by page


def shown_ids(html: str) -> list[int]:
    return [int(n) for n in re.findall(r' data-message-id="(\d+)"', html)]


def older_url(html: str) -> str | None:
    found = re.search(r'id="older-messages" data-older-url="([^"]+)"', html)
    return found.group(1) if found else None


def get_loading_no_whole_conversation(client: Client, url: str) -> str:
    """The page at `url`, checking that no query read every message's text: each
    one that reads it has a LIMIT, or starts at an id (the last turn's versions)."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    for query in queries.captured_queries:
        sql = query["sql"]
        if '"chat_message"."content"' in sql:
            assert " LIMIT " in sql or '"chat_message"."id" >= ' in sql, sql
    return response.content.decode()


def walk_back(client: Client, html: str) -> list[list[int]]:
    """Every older page from the one `html` links to, newest first."""
    pages = []
    url = older_url(html)
    while url is not None:
        response = client.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        pages.append(shown_ids(html))
        url = older_url(html)
    return pages


@pytest.fixture
def long_talk(conversation: Conversation) -> tuple[Conversation, list[int]]:
    return conversation, add_messages(conversation, MANY)


@pytest.fixture
def walked_talk(conversation: Conversation) -> tuple[Conversation, list[int]]:
    return conversation, add_messages(conversation, WALKED)


# The owner's page


def test_the_owners_page_shows_only_the_newest_page_in_order(alice_client, long_talk):
    conversation, ids = long_talk
    url = conversation.get_absolute_url()
    html = get_loading_no_whole_conversation(alice_client, url)
    assert shown_ids(html) == ids[-page_size() :]
    newest = ids[-page_size()]
    assert older_url(html) == reverse("older_messages", args=[conversation.pk, newest])
    assert "m4999" in html and ">m4949<" not in html


def test_older_pages_walk_back_to_the_first_message(alice_client, walked_talk):
    conversation, ids = walked_talk
    html = alice_client.get(conversation.get_absolute_url()).content.decode()
    pages = walk_back(alice_client, html)
    assert [len(page) for page in pages] == [page_size()] * 4 + [WALKED % page_size()]
    seen = [pk for page in reversed(pages) for pk in page] + shown_ids(html)
    assert seen == ids  # each message once, in order, ending at the first


def test_replaced_messages_stay_out_of_older_pages(alice_client, walked_talk):
    conversation, ids = walked_talk
    Message.objects.filter(pk__in=ids[100:110]).update(replaced=True)
    html = alice_client.get(conversation.get_absolute_url()).content.decode()
    seen = [pk for page in walk_back(alice_client, html) for pk in page]
    assert sorted(seen + shown_ids(html)) == ids[:100] + ids[110:]


def test_a_notice_is_shown_once_between_the_messages_around_it(
    alice_client, conversation
):
    ids = add_messages(conversation, 3 * page_size())
    start = timezone.now() - timedelta(days=1)
    at = {pk: start + timedelta(seconds=n) for n, pk in enumerate(ids)}
    for pk, created_at in at.items():
        Message.objects.filter(pk=pk).update(created_at=created_at)
    # One notice on each side of the first page boundary, one before everything.
    boundary = len(ids) - page_size()
    placed = {
        ids[boundary - 1]: "just before the newest page",
        ids[boundary]: "in the newest page",
    }
    for message_id, text in placed.items():
        notice = SettingsChange.objects.create(conversation=conversation, text=text)
        later = at[message_id] + timedelta(microseconds=1)
        SettingsChange.objects.filter(pk=notice.pk).update(created_at=later)
    first = SettingsChange.objects.create(conversation=conversation, text="first")
    earliest = at[ids[0]] - timedelta(seconds=1)
    SettingsChange.objects.filter(pk=first.pk).update(created_at=earliest)

    html = alice_client.get(conversation.get_absolute_url()).content.decode()
    pages = [html]
    url = older_url(html)
    while url:
        pages.append(alice_client.get(url).content.decode())
        url = older_url(pages[-1])
    items = re.findall(
        r'id="(message-\d+|settings-change-\d+)"', "".join(reversed(pages))
    )
    notices = [f"settings-change-{n.pk}" for n in SettingsChange.objects.all()]
    assert sorted(i for i in items if i.startswith("settings")) == sorted(notices)
    assert items[0] == f"settings-change-{first.pk}"
    for message_id, text in placed.items():
        notice = SettingsChange.objects.get(text=text)
        after = items.index(f"message-{message_id}") + 1
        assert items[after] == f"settings-change-{notice.pk}"


def test_the_last_answer_keeps_its_versions_control(alice_client, walked_talk):
    conversation, ids = walked_talk
    question, answer = Message.objects.filter(pk__in=ids[-2:]).order_by("pk")
    Message.objects.filter(pk__in=ids[-2:]).update(replaced=True)
    Message.objects.append_branch(
        [
            Message(
                conversation=conversation,
                role="user",
                content=question.content,
                parent_id=question.parent_id,
            ),
            Message(conversation=conversation, role="assistant", content="again"),
        ]
    )
    html = alice_client.get(conversation.get_absolute_url()).content.decode()
    assert 'class="version-number">2 / 2<' in html


def test_someone_elses_older_page_is_404(bob_client, alice_client, walked_talk):
    conversation, ids = walked_talk
    url = reverse("older_messages", args=[conversation.pk, ids[-1]])
    assert alice_client.get(url).status_code == 200
    assert bob_client.get(url).status_code == 404
    assert Client().get(url).status_code == 302  # to sign in


# The team page


@pytest.fixture
def team(alice, bob, conversation) -> Team:
    team = Team.objects.create(name="Research")
    team.members.add(alice, bob)
    team.conversations.add(conversation)
    return team


def ordinals(html: str) -> list[int]:
    return [int(n) for n in re.findall(r' id="message-(\d+)"', html)]


def test_the_team_page_shows_the_newest_page_by_ordinal(bob_client, team, long_talk):
    conversation, _ = long_talk
    url = reverse("team_conversation", args=[conversation.pk])
    html = get_loading_no_whole_conversation(bob_client, url)
    newest = list(range(MANY - page_size() + 1, MANY + 1))
    assert ordinals(html) == newest
    assert "thought 4999" in html  # members see the thinking
    first = newest[0]
    assert older_url(html) == reverse(
        "team_older_messages", args=[conversation.pk, first]
    )
    source = reverse("team_message_source", args=[conversation.pk, first])
    text = get_loading_no_whole_conversation(bob_client, source)
    assert text == f"m{first - 1}"


def test_team_older_pages_walk_back_and_refuse_outsiders(
    bob_client, django_user_model, team, walked_talk
):
    conversation, _ = walked_talk
    html = bob_client.get(reverse("team_conversation", args=[conversation.pk]))
    html = html.content.decode()
    url = older_url(html)
    pages = []
    while url:
        page = bob_client.get(url).content.decode()
        pages.append(ordinals(page))
        url = older_url(page)
    seen = [n for page in reversed(pages) for n in page] + ordinals(html)
    assert seen == list(range(1, WALKED + 1))
    assert (
        "thought 1<"
        in bob_client.get(
            reverse("team_older_messages", args=[conversation.pk, 51])
        ).content.decode()
    )

    carol = django_user_model.objects.create_user("carol", password="pw-carol-123")
    outsider = Client()
    outsider.force_login(carol)
    older = reverse("team_older_messages", args=[conversation.pk, 51])
    assert outsider.get(older).status_code == 404
    past_the_end = reverse("team_older_messages", args=[conversation.pk, WALKED + 2])
    assert bob_client.get(past_the_end).status_code == 404


# The shared page


def viewer_pages(token: str) -> tuple[str, list[str]]:
    viewer = Client()
    html = viewer.get(reverse("shared", args=[token])).content.decode()
    pages = []
    url = older_url(html)
    while url:
        response = viewer.get(url)
        assert response.status_code == 200
        assert response["Cache-Control"] == "no-store"
        pages.append(response.content.decode())
        url = older_url(pages[-1])
    return html, pages


def test_a_snapshot_link_shows_the_newest_page_up_to_its_snapshot(long_talk):
    conversation, _ = long_talk
    token = ShareLink.create_for(conversation)[1]
    add_messages(conversation, 100, start=MANY)  # after the snapshot
    html = get_loading_no_whole_conversation(Client(), reverse("shared", args=[token]))
    assert ordinals(html) == list(range(MANY - page_size() + 1, MANY + 1))
    assert "m4999" in html and "m5000" not in html


def test_a_snapshot_link_pages_back_from_its_snapshot_point(walked_talk):
    conversation, _ = walked_talk
    token = ShareLink.create_for(conversation)[1]
    add_messages(conversation, 100, start=WALKED)  # after the snapshot
    html, pages = viewer_pages(token)
    seen = [n for page in reversed(pages) for n in ordinals(page)] + ordinals(html)
    assert seen == list(range(1, WALKED + 1))
    assert "thought" not in html + "".join(pages)  # the link leaves it out


def test_a_live_links_socket_starts_after_the_newest_shown_message(walked_talk):
    conversation, _ = walked_talk
    token = ShareLink.create_for(conversation, mode="live", include_thinking=True)[1]
    html, pages = viewer_pages(token)
    assert f"/ws/share/{token}/?seen={WALKED}" in html
    assert "thought 1<" in pages[-1]
    source = Client().get(reverse("shared_message_source", args=[token, WALKED]))
    assert source.content.decode() == f"**m{WALKED - 1}**"


def test_a_revoked_or_expired_link_refuses_older_pages(walked_talk):
    conversation, _ = walked_talk
    link, token = ShareLink.create_for(conversation)
    url = reverse("shared_older_messages", args=[token, 101])
    assert Client().get(url).status_code == 200
    link.revoke()
    assert Client().get(url).status_code == 410
    _, other = ShareLink.create_for(
        conversation, expires_at=timezone.now() - timedelta(seconds=1)
    )
    url = reverse("shared_older_messages", args=[other, 101])
    assert Client().get(url).status_code == 410
    assert Client().get("/s/not-a-token/messages/before/101/").status_code == 404
