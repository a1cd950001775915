"""The sidebar's pins and archive (chat.web.sidebar.views); someone else's
conversation, and what is not a change."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Folder
from tests.web.sidebar.sidebar_page import HTMX, aged, entries, more_url, talk

pytestmark = pytest.mark.django_db


# Pins ----------------------------------------------------------------------


@pytest.mark.smoke
def test_pin_puts_it_in_pinned_and_is_not_activity(alice_client, alice):
    conversation = aged(talk(alice, "Plans"), 3)
    before = conversation.updated_at
    response = alice_client.post(
        reverse("pin_conversation", args=[conversation.pk]), **HTMX
    )
    assert response.status_code == 200
    assert response["HX-Reswap"] == "none"
    html = response.content.decode()
    assert f'<li id="conversation-item-{conversation.pk}" hx-swap-oob="delete">' in html
    pinned = html[html.index('id="pinned-section"') : html.index("</section>")]
    assert 'hx-swap-oob="true"' in pinned and entries(pinned) == [conversation.pk]
    assert ">Unpin</button>" in pinned
    conversation.refresh_from_db()
    assert conversation.pinned_at is not None and conversation.updated_at == before

    home = alice_client.get(reverse("home")).content.decode()
    shown = 'id="pinned-section" aria-labelledby="pinned-title">'  # (not hidden)
    assert shown in home
    assert entries(home[home.index('id="dated-list"') :]) == []
    response = alice_client.post(
        reverse("unpin_conversation", args=[conversation.pk]), **HTMX
    )
    html = response.content.decode()
    assert 'hx-swap-oob="afterbegin:#dated-list"' in html
    assert 'data-group="Previous 7 days"' in html
    conversation.refresh_from_db()
    assert conversation.pinned_at is None and conversation.updated_at == before


def test_pinned_ones_go_last_pinned_first(alice_client, alice):
    a, b = talk(alice, "A"), talk(alice, "B")
    for conversation in (b, a):
        alice_client.post(reverse("pin_conversation", args=[conversation.pk]))
    html = alice_client.get(reverse("home")).content.decode()
    pinned = html[html.index('id="pinned-section"') :]
    assert entries(pinned[: pinned.index("</section>")]) == [a.pk, b.pk]


# Someone else's, and what is not a change ---------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "pin_conversation",
        "unpin_conversation",
        "archive_conversation",
        "restore_conversation",
        "move_conversation",
    ],
)
def test_someone_elses_conversation_cannot_be_filed(bob_client, alice, name):
    conversation = talk(alice, "Alice's")
    response = bob_client.post(reverse(name, args=[conversation.pk]), **HTMX)
    assert response.status_code == 404
    again = Conversation.objects.get(pk=conversation.pk)
    assert (again.pinned_at, again.archived_at, again.folder_id) == (None, None, None)
    assert again.updated_at == conversation.updated_at


@pytest.mark.parametrize(
    "path",
    ["/c/abc/pin/", "/c/-1/archive/", "/c/1.5/restore/", "/folders/x/delete/"],
)
def test_non_numeric_ids_are_not_found(alice_client, path):
    assert alice_client.post(path, **HTMX).status_code == 404


def test_a_missing_conversation_is_not_found(alice_client):
    response = alice_client.post(reverse("pin_conversation", args=[987654]))
    assert response.status_code == 404


@pytest.mark.parametrize(
    "name", ["pin_conversation", "archive_conversation", "delete_folder"]
)
def test_changes_need_post(alice_client, alice, name):
    target = (
        Folder.objects.create(owner=alice, name="F")
        if name == "delete_folder"
        else talk(alice, "x")
    )
    assert alice_client.get(reverse(name, args=[target.pk])).status_code == 405


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("pin_conversation", {}),
        ("archive_conversation", {}),
        ("move_conversation", {"folder": ""}),
        ("create_folder", {"name": "F"}),
    ],
)
def test_changes_need_a_csrf_token(alice, name, data):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    conversation = talk(alice, "x")
    args = [] if name == "create_folder" else [conversation.pk]
    assert client.post(reverse(name, args=args), data, **HTMX).status_code == 403
    assert not Folder.objects.exists()
    conversation.refresh_from_db()
    assert conversation.pinned_at is None and conversation.archived_at is None


def test_an_api_only_conversation_is_not_filed(alice_client, alice):
    hidden = talk(alice, "api", listed=False)
    response = alice_client.post(reverse("pin_conversation", args=[hidden.pk]))
    assert response.status_code == 404


# Archive -------------------------------------------------------------------


@pytest.mark.smoke
def test_archive_hides_it_and_restore_brings_it_back(alice_client, alice):
    conversation = aged(talk(alice, "Old plans"), 40)
    before = conversation.updated_at
    response = alice_client.post(
        reverse("archive_conversation", args=[conversation.pk]), **HTMX
    )
    html = response.content.decode()
    assert f'<li id="conversation-item-{conversation.pk}" hx-swap-oob="delete">' in html
    assert "afterbegin:#dated-list" not in html
    assert conversation.pk not in entries(
        alice_client.get(reverse("home")).content.decode()
    )

    page = alice_client.get(reverse("archived")).content.decode()
    assert f'id="archived-{conversation.pk}"' in page and "Old plans" in page

    # Its own page still works, says so, and offers Restore.
    own = alice_client.get(conversation.get_absolute_url()).content.decode()
    assert "This conversation is archived" in own
    assert reverse("restore_conversation", args=[conversation.pk]) in own

    response = alice_client.post(
        reverse("restore_conversation", args=[conversation.pk])
    )
    assert response.url == conversation.get_absolute_url()
    assert conversation.pk in entries(
        alice_client.get(reverse("home")).content.decode()
    )
    conversation.refresh_from_db()
    assert conversation.archived_at is None and conversation.updated_at == before


def test_restore_from_the_archive_page_goes_back_there(alice_client, alice):
    conversation = talk(alice, "x", archived_at=timezone.now())
    response = alice_client.post(
        reverse("restore_conversation", args=[conversation.pk]),
        {"next": reverse("archived")},
    )
    assert response.url == reverse("archived")


def test_restore_never_redirects_off_the_site(alice_client, alice):
    conversation = talk(alice, "x", archived_at=timezone.now())
    response = alice_client.post(
        reverse("restore_conversation", args=[conversation.pk]),
        {"next": "https://evil.example/"},
    )
    assert response.url == conversation.get_absolute_url()


def test_the_archive_is_paged_and_only_mine(alice_client, alice, bob, settings):
    settings.SIDEBAR_PAGE_SIZE = 2
    now = timezone.now()
    made = [
        talk(alice, f"a{n}", archived_at=now - timedelta(minutes=n)) for n in range(5)
    ]
    talk(bob, "bobs archived", archived_at=now)
    page = alice_client.get(reverse("archived")).content.decode()
    found = [int(n) for n in re.findall(r'id="archived-(\d+)"', page)]
    url = more_url(page)
    while url:
        page = alice_client.get(url, **HTMX).content.decode()
        assert "<html" not in page
        found += [int(n) for n in re.findall(r'id="archived-(\d+)"', page)]
        url = more_url(page)
    assert found == [c.pk for c in made]
    assert "bobs archived" not in page


def test_an_empty_archive_says_so(alice_client):
    page = alice_client.get(reverse("archived")).content.decode()
    assert re.search(r'id="archived-none">No archived conversations', page)
