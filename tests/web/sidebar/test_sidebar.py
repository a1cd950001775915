"""The sidebar's views (chat.web.sidebar.views): pages as it is scrolled, the
empty conversation, the entry. Pins and the archive: test_pins_and_archive.py;
folders and moving: test_folders.py."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation
from tests.web.sidebar.sidebar_page import HTMX, aged, entries, headings, more_url, talk

pytestmark = pytest.mark.django_db


# Pages ---------------------------------------------------------------------


@pytest.mark.smoke
def test_scrolling_reaches_every_conversation_once_under_each_heading_once(
    alice_client, alice, settings
):
    """A few hundred conversations, pages of 7: following each page's
    sentinel reaches the last one (the 5,000th is reached the same way)."""
    settings.SIDEBAR_PAGE_SIZE = 7
    now = timezone.now()
    made = []
    for n in range(300):
        conversation = Conversation.objects.create(owner=alice, title=f"c{n}")
        made.append(conversation)
    for conversation in made:
        conversation.messages.create(role="user", content="q")
    for n, conversation in enumerate(made):
        # Spread over about 100 days, several on each: every kind of group.
        Conversation.objects.filter(pk=conversation.pk).update(
            updated_at=now - timedelta(hours=8 * (299 - n))
        )
    html = alice_client.get(reverse("home")).content.decode()
    start = html.index('id="dated-list"')
    html = html[start : html.index("</ul>", start)]
    seen, titles = entries(html), headings(html)
    url = more_url(html)
    pages = 1
    while url:
        response = alice_client.get(url, **HTMX)
        assert response.status_code == 200
        page = response.content.decode()
        seen += entries(page)
        titles += headings(page)
        url = more_url(page)
        pages += 1
    assert seen == [c.pk for c in reversed(made)]
    assert pages == 43  # 300 / 7, rounded up
    assert len(titles) == len(set(titles))  # never twice across a page boundary
    assert titles[:4] == ["Today", "Yesterday", "Previous 7 days", "Previous 30 days"]
    assert all(re.fullmatch(r"[A-Z][a-z]+ 20\d\d", t) for t in titles[4:])


def test_a_page_continuing_a_group_has_no_heading_for_it(alice_client, alice, settings):
    settings.SIDEBAR_PAGE_SIZE = 2
    for n in range(3):
        talk(alice, f"today {n}")
    aged(talk(alice, "yesterday"), 1)
    first = alice_client.get(reverse("home")).content.decode()
    second = alice_client.get(more_url(first), **HTMX).content.decode()
    assert headings(second) == ["Yesterday"]
    assert len(entries(second)) == 2


@pytest.mark.parametrize(
    "after", ["abc", "1-", "-5", "1.5-2", "99999999999999999999-1", "１-2"]
)
def test_a_malformed_cursor_is_a_400_with_a_message(alice_client, after):
    response = alice_client.get(reverse("sidebar_page"), {"after": after}, **HTMX)
    assert response.status_code == 400
    assert "reload the page" in response.content.decode()


def test_pages_are_only_for_the_signed_in(client, alice):
    response = client.get(reverse("sidebar_page"))
    assert response.status_code == 302 and "/login/" in response.url


def test_pages_hold_only_my_conversations(alice_client, alice, bob):
    mine = talk(alice, "mine")
    talk(bob, "secret of bob")
    html = alice_client.get(reverse("sidebar_page"), **HTMX).content.decode()
    assert entries(html) == [mine.pk] and "secret of bob" not in html


# Empty conversations -------------------------------------------------------


@pytest.mark.smoke
def test_new_conversation_reuses_the_empty_one_and_it_is_not_listed(
    alice_client, alice
):
    first = alice_client.post(reverse("new_conversation"))
    second = alice_client.post(reverse("new_conversation"))
    assert first.url == second.url
    assert Conversation.objects.filter(owner=alice).count() == 1
    home = alice_client.get(reverse("home")).content.decode()
    assert entries(home) == []
    assert "No conversations yet." in home


def test_the_open_empty_conversation_is_on_top_as_new_conversation(alice_client, alice):
    older = talk(alice, "Older")
    empty = Conversation.objects.create(owner=alice)
    html = alice_client.get(empty.get_absolute_url()).content.decode()
    assert entries(html) == [empty.pk, older.pk]
    top = html[html.index('id="current-new"') :]
    top = top[: top.index("</ul>")]
    assert f'href="/c/{empty.pk}/" aria-current="page">New conversation</a>' in top
    assert "item-menu-button" not in top  # nothing to file yet
    # Elsewhere it is not listed.
    assert empty.pk not in entries(
        alice_client.get(older.get_absolute_url()).content.decode()
    )


# The entry -----------------------------------------------------------------


def test_an_imported_conversation_has_a_badge(alice_client, alice):
    talk(alice, "From elsewhere", imported_from="openwebui")
    talk(alice, "Mine")
    html = alice_client.get(reverse("home")).content.decode()
    assert html.count(">Imported</span>") == 1


def test_the_entry_menu_holds_every_action(alice_client, alice):
    conversation = talk(alice, "Plans")
    html = alice_client.get(reverse("home")).content.decode()
    menu = html[html.index(f'id="item-menu-{conversation.pk}"') :]
    menu = menu[: menu.index("</div>")]
    assert re.findall(r'role="menuitem"[^>]*>([^<]+)<', menu) == [
        "Rename",
        "Pin",
        "Move to folder…",
        "Archive",
        "Delete",
    ]
    button = f'aria-controls="item-menu-{conversation.pk}"'
    assert button in html and 'aria-haspopup="menu" aria-expanded="false"' in html


def test_a_page_costs_the_same_few_queries_however_many_it_shows(
    alice_client, alice, settings, django_assert_max_num_queries
):
    settings.SIDEBAR_PAGE_SIZE = 40
    for n in range(45):
        talk(alice, f"c{n}", imported_from="chatgpt" if n % 2 else "")
    first = alice_client.get(reverse("sidebar_page"), **HTMX).content.decode()
    # The session, the user, the page: nothing per entry.
    with django_assert_max_num_queries(3):
        response = alice_client.get(more_url(first), **HTMX)
    assert len(entries(response.content.decode())) == 5
