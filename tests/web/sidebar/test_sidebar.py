"""The sidebar's views (chat.web.sidebar.views): pages as it is scrolled, pins, the
archive, folders, moving; someone else's things and bad input."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Folder

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def talk(owner, title: str, **fields) -> Conversation:
    conversation = Conversation.objects.create(owner=owner, title=title, **fields)
    conversation.messages.create(role="user", content=title)
    return conversation


def aged(conversation: Conversation, days: float) -> Conversation:
    Conversation.objects.filter(pk=conversation.pk).update(
        updated_at=timezone.now() - timedelta(days=days)
    )
    conversation.refresh_from_db()
    return conversation


def entries(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'id="conversation-item-(\d+)"', html)]


def headings(html: str) -> list[str]:
    return re.findall(r'<h2 class="group-title"[^>]*>([^<]+)</h2>', html)


def more_url(html: str) -> str | None:
    found = re.search(r'class="sidebar-more" hx-get="([^"]+)"', html)
    return found[1].replace("&amp;", "&") if found else None


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
