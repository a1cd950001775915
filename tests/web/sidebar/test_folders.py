"""The sidebar's folders (chat.web.sidebar.views): made, named, renamed,
deleted; conversations moved into them and out, and their later pages."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Folder
from tests.web.sidebar.sidebar_page import HTMX, aged, entries, headings, more_url, talk

pytestmark = pytest.mark.django_db


# Folders -------------------------------------------------------------------


def folder_error(response) -> str:
    found = re.search(
        r'class="error-text small" id="[^"]+">([^<]*)<', response.content.decode()
    )
    return found[1] if found else ""


@pytest.mark.smoke
def test_create_a_folder_and_its_section_comes_back(alice_client, alice):
    form = alice_client.get(reverse("create_folder"), **HTMX)
    assert form.status_code == 200 and 'name="name"' in form.content.decode()
    response = alice_client.post(reverse("create_folder"), {"name": "  Work  "}, **HTMX)
    assert response.status_code == 200 and response["HX-Reswap"] == "none"
    folder = Folder.objects.get()
    assert folder.owner == alice and folder.name == "Work"
    html = response.content.decode()
    assert (
        'id="folders-section"' in html and 'id="folder-form-slot" hx-swap-oob' in html
    )
    assert f'id="folder-{folder.pk}"' in html


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("", "Give the folder a name."),
        ("   \t\n ", "Give the folder a name."),
        ("\x00\x01", "Give the folder a name."),
        ("x" * 81, "A folder name is at most 80 characters (this one has 81)."),
        ("work", "You already have a folder named “work”."),
        ("WORK", "You already have a folder named “WORK”."),
    ],
)
def test_a_bad_folder_name_is_refused_with_a_clear_error(
    alice_client, alice, name, error
):
    Folder.objects.create(owner=alice, name="Work")
    response = alice_client.post(reverse("create_folder"), {"name": name}, **HTMX)
    assert response.status_code == 422
    assert folder_error(response) == error.replace("“", "“").replace("”", "”")
    assert 'aria-invalid="true"' in response.content.decode()
    assert Folder.objects.count() == 1


def test_80_characters_are_enough_and_control_characters_go(alice_client, alice):
    response = alice_client.post(
        reverse("create_folder"), {"name": "a\x00b\x1bc\nd" + "x" * 74}, **HTMX
    )
    assert response.status_code == 200
    assert Folder.objects.get().name == "abc d" + "x" * 74  # 80


def test_the_same_name_is_fine_for_someone_else(alice_client, alice, bob):
    Folder.objects.create(owner=bob, name="Work")
    response = alice_client.post(reverse("create_folder"), {"name": "work"}, **HTMX)
    assert response.status_code == 200
    assert Folder.objects.filter(owner=alice, name="work").exists()


def test_a_folder_name_is_escaped(alice_client, alice):
    hostile = '<img src=x onerror="alert(1)">'
    alice_client.post(reverse("create_folder"), {"name": hostile}, **HTMX)
    html = alice_client.get(reverse("home")).content.decode()
    assert hostile not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html


def test_rename_a_folder(alice_client, alice):
    folder = Folder.objects.create(owner=alice, name="Work")
    Folder.objects.create(owner=alice, name="Home")
    url = reverse("rename_folder", args=[folder.pk])
    assert 'value="Work"' in alice_client.get(url, **HTMX).content.decode()
    response = alice_client.post(url, {"name": "home"}, **HTMX)
    assert response.status_code == 422
    assert folder_error(response) == "You already have a folder named “home”."
    # Its own name in another case is fine.
    assert alice_client.post(url, {"name": "WORK"}, **HTMX).status_code == 200
    folder.refresh_from_db()
    assert folder.name == "WORK"


def test_someone_elses_folder_is_never_usable(alice_client, alice, bob):
    theirs = Folder.objects.create(owner=bob, name="Bob's")
    conversation = talk(alice, "mine")
    assert (
        alice_client.get(reverse("rename_folder", args=[theirs.pk])).status_code == 404
    )
    assert (
        alice_client.post(reverse("rename_folder", args=[theirs.pk]), {"name": "x"})
    ).status_code == 404
    assert (
        alice_client.post(reverse("delete_folder", args=[theirs.pk])).status_code == 404
    )
    assert alice_client.get(reverse("folder_page", args=[theirs.pk])).status_code == 404
    response = alice_client.post(
        reverse("move_conversation", args=[conversation.pk]),
        {"folder": str(theirs.pk)},
        **HTMX,
    )
    assert response.status_code == 404
    conversation.refresh_from_db()
    theirs.refresh_from_db()
    assert conversation.folder is None and theirs.name == "Bob's"


def test_deleting_a_folder_sends_its_conversations_back_to_the_list(
    alice_client, alice
):
    folder = Folder.objects.create(owner=alice, name="Work")
    inside = [talk(alice, f"in {n}", folder=folder) for n in range(2)]
    response = alice_client.post(reverse("delete_folder", args=[folder.pk]), **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'hx-swap-oob="afterbegin:#dated-list"' in html
    assert set(entries(html)) == {c.pk for c in inside}
    assert not Folder.objects.exists()
    assert Conversation.objects.filter(folder=None, owner=alice).count() == 2


def test_the_delete_confirmation_says_conversations_are_kept(alice_client, alice):
    Folder.objects.create(owner=alice, name="Work")
    html = alice_client.get(reverse("home")).content.decode()
    assert "Its conversations go back to the list; none of them is deleted." in html


# Moving --------------------------------------------------------------------


@pytest.mark.smoke
def test_move_into_a_folder_and_back_out(alice_client, alice):
    folder = Folder.objects.create(owner=alice, name="Work")
    conversation = aged(talk(alice, "Plans"), 2)
    before = conversation.updated_at
    url = reverse("move_conversation", args=[conversation.pk])
    form = alice_client.get(url, **HTMX).content.decode()
    assert f'<option value="{folder.pk}">Work</option>' in form

    response = alice_client.post(url, {"folder": str(folder.pk)}, **HTMX)
    html = response.content.decode()
    section = html[html.index(f'id="folder-{folder.pk}"') :]
    assert entries(section)[:1] == [conversation.pk]
    home = alice_client.get(reverse("home")).content.decode()
    dated = home[home.index('id="dated-list"') :]
    assert conversation.pk not in entries(dated)  # under its folder only

    response = alice_client.post(url, {"folder": ""}, **HTMX)
    assert 'hx-swap-oob="afterbegin:#dated-list"' in response.content.decode()
    conversation.refresh_from_db()
    assert conversation.folder is None and conversation.updated_at == before


def test_move_into_a_new_folder(alice_client, alice):
    conversation = talk(alice, "Plans")
    url = reverse("move_conversation", args=[conversation.pk])
    response = alice_client.post(url, {"folder": "", "name": "Trips"}, **HTMX)
    assert response.status_code == 200
    conversation.refresh_from_db()
    assert conversation.folder.name == "Trips"
    response = alice_client.post(url, {"name": "trips"}, **HTMX)
    assert response.status_code == 422
    assert folder_error(response) == "You already have a folder named “trips”."


@pytest.mark.parametrize("value", ["abc", "1 OR 1=1", "-1", "１", "9" * 30])
def test_move_refuses_what_is_not_a_folder(alice_client, alice, value):
    conversation = talk(alice, "Plans")
    response = alice_client.post(
        reverse("move_conversation", args=[conversation.pk]), {"folder": value}, **HTMX
    )
    assert response.status_code == 422
    assert folder_error(response) == "Choose one of your folders."
    conversation.refresh_from_db()
    assert conversation.folder is None


def test_moving_a_pinned_one_unpins_it(alice_client, alice):
    folder = Folder.objects.create(owner=alice, name="Work")
    conversation = talk(alice, "Plans", pinned_at=timezone.now())
    alice_client.post(
        reverse("move_conversation", args=[conversation.pk]), {"folder": folder.pk}
    )
    conversation.refresh_from_db()
    assert conversation.pinned_at is None and conversation.folder == folder


def test_a_folders_later_pages(alice_client, alice, settings):
    settings.SIDEBAR_PAGE_SIZE = 2
    folder = Folder.objects.create(owner=alice, name="Work")
    made = [talk(alice, f"c{n}", folder=folder) for n in range(5)]
    html = alice_client.get(reverse("home")).content.decode()
    section = html[html.index(f'id="folder-items-{folder.pk}"') :]
    section = section[: section.index("</ul>")]
    seen, url = entries(section), more_url(section)
    while url:
        page = alice_client.get(url, **HTMX).content.decode()
        assert headings(page) == []
        seen += entries(page)
        url = more_url(page)
    assert seen == [c.pk for c in reversed(made)]
