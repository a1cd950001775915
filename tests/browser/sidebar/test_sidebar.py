"""The sidebar in Chromium: scrolling loads the next page under the right
headings; pin, archive and restore; a folder made, a conversation dragged
into it; the keyboard's way through the entry's menu; new activity."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from chat.models import Conversation, Folder
from chat.models.sidebar import page_size
from tests.browser.chat_page import ask, open_conversation, wait_until_done
from tests.support.waiting import until_sync

pytestmark = pytest.mark.django_db(transaction=True)


def talk(owner, title, profile, days_ago: float = 0, **fields) -> Conversation:
    conversation = Conversation.objects.create(
        owner=owner, title=title, model_profile=profile, **fields
    )
    conversation.messages.create(role="user", content=title)
    Conversation.objects.filter(pk=conversation.pk).update(
        updated_at=timezone.now() - timedelta(days=days_ago)
    )
    conversation.refresh_from_db()
    return conversation


def entry(page, conversation):
    return page.locator(f"#conversation-item-{conversation.pk}")


def choose(page, conversation, action):
    entry(page, conversation).locator(".item-menu-button").click()
    entry(page, conversation).get_by_role("menuitem", name=action).click()


def test_scrolling_loads_the_next_pages_under_the_right_headings(
    live_server_url, page, login, alice, demo_profile
):
    size = page_size()
    count = 2 * size + 5
    # Newest first: a day apart from the 3rd on, so every kind of group shows.
    made = [
        talk(alice, f"c{n}", demo_profile, days_ago=max(0, n - 2) * 1.0 + n * 0.001)
        for n in range(count)
    ]
    open_conversation(page, login, live_server_url, made[0], alice)
    items = page.locator("#dated-list > li.conversation-item")
    expect(items).to_have_count(size)
    for pages in (2, 3):
        page.locator("#dated-list > .sidebar-more").scroll_into_view_if_needed()
        expect(items).to_have_count(min(count, pages * size))
    expect(page.locator("#dated-list > .sidebar-more")).to_have_count(0)
    shown = [int(i.split("-")[-1]) for i in items.evaluate_all("l => l.map(e => e.id)")]
    assert shown == [c.pk for c in made]
    titles = page.locator("#dated-list .group-title").all_inner_texts()
    assert len(titles) == len(set(titles))  # none repeated at a page boundary
    assert titles[:4] == ["Today", "Yesterday", "Previous 7 days", "Previous 30 days"]
    assert len(titles) > 4  # then months


def test_pin_moves_it_to_the_top(live_server_url, page, login, alice, demo_profile):
    old = talk(alice, "Old plans", demo_profile, days_ago=10)
    new = talk(alice, "New ideas", demo_profile)
    open_conversation(page, login, live_server_url, new, alice)
    pinned = page.locator("#pinned-section")
    expect(pinned).to_be_hidden()
    choose(page, old, "Pin")
    expect(pinned.locator(".conversation-item")).to_have_count(1)
    expect(pinned).to_be_visible()
    expect(pinned.locator(f"#conversation-item-{old.pk}")).to_have_count(1)
    expect(page.locator(f"#dated-list #conversation-item-{old.pk}")).to_have_count(0)
    before = old.updated_at
    old.refresh_from_db()
    assert old.pinned_at is not None and old.updated_at == before

    # Unpinned, it goes back under its date, not to the top.
    choose(page, old, "Unpin")
    expect(pinned).to_be_hidden()
    dated = page.locator("#dated-list > li")
    expect(dated).to_have_text(
        ["Today", "New ideas", "Previous 30 days", "Old plans"], use_inner_text=True
    )


def test_archive_hides_it_and_restore_brings_it_back(
    live_server_url, page, login, alice, demo_profile
):
    kept = talk(alice, "Kept", demo_profile)
    gone = talk(alice, "To archive", demo_profile, days_ago=3)
    open_conversation(page, login, live_server_url, kept, alice)
    choose(page, gone, "Archive")
    expect(entry(page, gone)).to_have_count(0)
    until_sync(lambda: Conversation.objects.get(pk=gone.pk).archived_at, "archived")

    page.click("#archived-link")
    row = page.locator(f"#archived-{gone.pk}")
    expect(row).to_contain_text("To archive")
    row.get_by_role("button", name="Restore “To archive”").click()
    expect(row).to_have_count(0)
    expect(page.locator(f"#dated-list #conversation-item-{gone.pk}")).to_be_visible()
    page.reload()
    expect(page.locator("#archived-none")).to_be_visible()
    expect(page.locator(f"#dated-list #conversation-item-{gone.pk}")).to_be_visible()


def test_an_archived_conversations_page_offers_restore(
    live_server_url, page, login, alice, demo_profile
):
    gone = talk(alice, "Archived", demo_profile, archived_at=timezone.now())
    open_conversation(page, login, live_server_url, gone, alice)
    banner = page.locator("#archived-banner")
    expect(banner).to_contain_text("This conversation is archived")
    banner.get_by_role("button", name="Restore").click()
    expect(banner).to_have_count(0)
    expect(entry(page, gone)).to_be_visible()


def test_a_folder_made_and_a_conversation_dragged_into_it_stays_after_reload(
    live_server_url, page, login, alice, demo_profile
):
    plans = talk(alice, "Trip plans", demo_profile)
    other = talk(alice, "Other", demo_profile)
    open_conversation(page, login, live_server_url, other, alice)
    page.click("#new-folder")
    field = page.locator("#folder-name-new")
    expect(field).to_be_focused()
    field.fill("Trips")
    field.press("Enter")
    heading = page.locator(".folder-heading", has_text="Trips")
    expect(heading).to_be_visible()
    folder = Folder.objects.get(owner=alice)

    # A second one with the same name in another case: refused, said inline.
    page.click("#new-folder")
    page.locator("#folder-name-new").fill("TRIPS")
    page.locator("#folder-name-new").press("Enter")
    expect(page.locator("#folder-error-new")).to_have_text(
        "You already have a folder named “TRIPS”."
    )
    page.locator("#folder-name-new").press("Escape")
    expect(page.locator("#folder-name-new")).to_have_count(0)

    entry(page, plans).drag_to(heading)
    inside = page.locator(f"#folder-items-{folder.pk} #conversation-item-{plans.pk}")
    expect(inside).to_be_visible()
    expect(page.locator(f"#dated-list #conversation-item-{plans.pk}")).to_have_count(0)
    page.reload()
    expect(inside).to_be_visible()

    # Folded away, and still folded after a reload (localStorage).
    toggle = page.locator(f"#folder-toggle-{folder.pk}")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(inside).to_be_hidden()
    page.reload()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(inside).to_be_hidden()


def test_the_keyboard_path_through_the_entry_menu(
    live_server_url, page, login, alice, demo_profile
):
    folder = Folder.objects.create(owner=alice, name="Work")
    plans = talk(alice, "Plans", demo_profile)
    open_conversation(page, login, live_server_url, plans, alice)
    button = entry(page, plans).locator(".item-menu-button")
    menu = page.locator(f"#item-menu-{plans.pk}")
    button.focus()
    page.keyboard.press("Enter")
    expect(menu).to_be_visible()
    expect(button).to_have_attribute("aria-expanded", "true")
    expect(menu.get_by_role("menuitem", name="Rename")).to_be_focused()
    page.keyboard.press("ArrowUp")  # wraps to the last
    expect(menu.get_by_role("menuitem", name="Delete")).to_be_focused()
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(button).to_be_focused()
    expect(button).to_have_attribute("aria-expanded", "false")

    page.keyboard.press("ArrowDown")  # opens on the first
    expect(menu.get_by_role("menuitem", name="Rename")).to_be_focused()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(menu.get_by_role("menuitem", name="Move to folder…")).to_be_focused()
    page.keyboard.press("Enter")
    select = page.locator(f"#move-folder-{plans.pk}")
    expect(select).to_be_focused()
    # htmx focuses the form's [autofocus] again when its swap settles (20 ms
    # later, as it takes the added class off): wait for that before tabbing on.
    expect(entry(page, plans)).not_to_have_class(re.compile(r"htmx-added"))
    select.select_option(label="Work")
    page.keyboard.press("Tab")  # the new folder's name (left blank)
    page.keyboard.press("Tab")
    expect(entry(page, plans).get_by_role("button", name="Move")).to_be_focused()
    page.keyboard.press("Enter")
    inside = page.locator(f"#folder-items-{folder.pk} #conversation-item-{plans.pk}")
    expect(inside).to_be_visible()
    plans.refresh_from_db()
    assert plans.folder == folder


@pytest.fixture
def last_week(live_server_url, page, login, alice, demo_profile, simulator):
    """ "Last week" open, below "Recent": its next question moves it to Today."""
    simulator.config.answer_tokens = 3
    old = talk(alice, "Last week", demo_profile, days_ago=5)
    talk(alice, "Recent", demo_profile)
    open_conversation(page, login, live_server_url, old, alice)
    return old


def test_new_activity_moves_an_entry_to_today_and_an_empty_one_waits_on_top(
    page, alice, last_week
):
    dated = page.locator("#dated-list > li")
    expect(dated).to_have_text(
        ["Today", "Recent", "Previous 7 days", "Last week"], use_inner_text=True
    )
    ask(page, "More about it")
    expect(dated).to_have_text(["Today", "Last week", "Recent"], use_inner_text=True)
    wait_until_done(page)

    # "New conversation": on top while empty, in Today from its first question.
    page.click("#sidebar .new-chat")
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    fresh = Conversation.objects.filter(owner=alice).order_by("-pk").first()
    top = page.locator("#current-new .conversation-item a")
    expect(top).to_have_text("New conversation")
    expect(top).to_have_attribute("aria-current", "page")
    ask(page, "Hello there")
    expect(page.locator("#current-new")).to_have_count(0)
    expect(dated.nth(1)).to_have_text("Hello there", use_inner_text=True)
    expect(dated.nth(1)).to_have_id(f"conversation-item-{fresh.pk}")
    wait_until_done(page)


def test_an_entry_moved_by_new_activity_keeps_the_rename_being_typed(
    live_server_url, page, last_week
):
    old = last_week
    choose(page, old, "Rename")
    field = page.locator(f"#rename-{old.pk}")
    expect(field).to_be_focused()
    page.keyboard.press("End")
    page.keyboard.type(" plans")

    # A question sent from another tab moves the entry, form and all, to Today.
    other = page.context.new_page()
    other.goto(live_server_url + old.get_absolute_url())
    expect(other.locator("#chat")).to_have_attribute("data-connected", "1")
    ask(other, "More about it")
    dated = page.locator("#dated-list > li")
    expect(dated.nth(1)).to_have_id(f"conversation-item-{old.pk}")
    wait_until_done(other)

    expect(field).to_be_focused()
    page.keyboard.type(", again")
    expect(field).to_have_value("Last week plans, again")


@pytest.mark.parametrize(
    ("newer", "older"),
    [
        pytest.param(5, 5.1, id="same-group"),
        # "Today" left empty: the next entry is past the next group's heading.
        pytest.param(0, 5, id="across-a-heading"),
    ],
)
def test_archiving_from_the_keyboard_leaves_the_focus_on_the_next_entry(
    live_server_url, page, login, alice, demo_profile, newer, older
):
    # Days apart that keep their groups at any hour (chat/models/sidebar.py,
    # date_group): minutes apart would fall into two groups around midnight.
    after = talk(alice, "Older", demo_profile, days_ago=older)
    gone = talk(alice, "Newer", demo_profile, days_ago=newer)
    open_conversation(page, login, live_server_url, after, alice)
    entry(page, gone).locator(".item-menu-button").focus()
    page.keyboard.press("Enter")
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    expect(page.get_by_role("menuitem", name="Archive")).to_be_focused()
    page.keyboard.press("Enter")
    expect(entry(page, gone)).to_have_count(0)
    expect(entry(page, after).locator("a")).to_be_focused()
