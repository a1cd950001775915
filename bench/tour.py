"""Every page of the site, with the data each one needs: the accessibility test
(tests/browser/site/test_accessibility.py) and the screenshots (bench/screenshots.py)
walk the same tour, so a page added here is both checked and photographed.

`populate()` makes the people and their conversations, team, links and
invitations with the ORM (the caller's database, the one its server reads) and
returns the stops; `walk()` visits them in one browser context, as whoever each
stop is for, and hands each page to a callback once it is ready.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

PASSWORD = "a-long-tour-password-7"
THEMES = ("light", "dark")
VIEWPORTS = {"desktop": (1280, 800), "phone": (390, 844)}

ANSWER = """Use `sorted()` for a new list, or `list.sort()` to sort in place:

```python
names = ["Carol", "alice", "Bob"]
print(sorted(names, key=str.lower))
```

| call | returns |
| --- | --- |
| `sorted(xs)` | a new list |
| `xs.sort()` | `None` |

Both are **stable**: equal items keep their order."""


@dataclass(frozen=True)
class Stop:
    """One page of the tour: its name, its path, who looks at it (a username,
    or None: signed out) and what is done on it first (a dialog opened...)."""

    name: str
    path: str
    who: str | None
    then: Callable[[Any], None] | None = None


# ---------------------------------------------------------------- settling

# How long a page must have had no request in flight to count as settled.
# Playwright's own "networkidle" waits 500 ms after the last one: with about
# 170 pages a run (the tour in four themes and sizes, the policy checks) that
# was over a minute of `make test` spent waiting on pages already still.
QUIET_SECONDS = 0.15


class Traffic:
    """The requests of one page still in flight: watched from before its first
    navigation, so `settle` knows when the page stopped asking (its WebSocket
    is not a request and does not count, as in Playwright's "networkidle")."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.inflight: set[Any] = set()
        self.changed = time.monotonic()
        page.on("request", self._started)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)

    def _started(self, request: Any) -> None:
        self.inflight.add(request)
        self.changed = time.monotonic()

    def _ended(self, request: Any) -> None:
        self.inflight.discard(request)
        self.changed = time.monotonic()

    def settle(self, timeout: float = 15.0) -> None:
        """Wait until no request has been in flight for `QUIET_SECONDS` (the
        page's events are taken in while Playwright waits)."""
        deadline = time.monotonic() + timeout
        while self.inflight or time.monotonic() - self.changed < QUIET_SECONDS:
            if time.monotonic() > deadline:
                pending = ", ".join(sorted(r.url for r in self.inflight)) or "none"
                raise TimeoutError(f"the page never settled (in flight: {pending})")
            self.page.wait_for_timeout(25)


# ---------------------------------------------------------------- actions


def _open_settings(page: Any) -> None:
    page.click("#settings-drawer > summary")
    page.locator("#settings-panel").wait_for(state="visible")


def _open_share_dialog(page: Any) -> None:
    page.click("#share-button")
    page.locator("#share-dialog .share-form").wait_for(state="visible")


def _make_share_link(page: Any) -> None:
    """The share dialog with a link just made (its Copy button shown)."""
    _open_share_dialog(page)
    page.click("#share-dialog .share-form button[type=submit]")
    page.locator("#share-new-url").wait_for(state="visible")


def _open_search_dialog(page: Any) -> None:
    page.keyboard.press("Control+k")
    page.locator("#search-dialog").wait_for(state="visible")
    page.fill("#search-input", "sort")
    page.locator("#search-results a").first.wait_for(state="visible")


def _open_model_picker(page: Any) -> None:
    """The composer's model picker with its menu open (its models listed)."""
    page.click("#model-picker-button")
    page.locator("#model-picker-list .model-option").first.wait_for(state="visible")


def _open_shortcuts(page: Any) -> None:
    page.keyboard.press("Control+/")
    page.locator("#shortcuts-dialog").wait_for(state="visible")


def _setup_errors(page: Any) -> None:
    """The first-admin form sent with passwords that differ: its errors shown."""
    page.fill("#id_username", "admin")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD + "-not")
    page.click("button[type=submit]")
    page.locator(".errorlist").first.wait_for(state="visible")


def _sign_in_errors(page: Any) -> None:
    page.fill("#id_username", "nobody")
    page.fill("#id_password", "wrong-password")
    page.click("button[type=submit]")
    page.locator(".error-text").wait_for(state="visible")


def _new_invitation(page: Any) -> None:
    """The admin makes an invitation: the page that shows its link once."""
    page.fill("#id_email", "dan@example.org")
    page.click("input[name=_save]")
    page.locator("#invitation-link").wait_for(state="visible")


def _new_api_key(page: Any) -> None:
    """The user page with a key just made (shown once)."""
    form = page.locator("form.api-key-form")
    form.locator("input[name=name]").fill("Laptop")
    form.locator("button[type=submit]").click()
    page.locator("#new-api-key").wait_for(state="visible")


# ---------------------------------------------------------------- the data


SETUP = (
    Stop("setup", "/setup/", None),
    Stop("setup-errors", "/setup/", None, _setup_errors),
)


def populate(profile: Any) -> list[Stop]:
    """People, conversations, a team, links and invitations (with `profile`,
    a ModelProfile, as their model); the stops that show them. Needs an empty
    user table (the setup page comes before it: `SETUP`)."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from chat.models import (
        ApiKey,
        AuditEvent,
        Conversation,
        Folder,
        Invitation,
        Membership,
        Message,
        ShareLink,
        Team,
    )

    users = get_user_model().objects
    admin = users.create_user(
        "admin", "admin@example.org", PASSWORD, is_staff=True, is_superuser=True
    )
    alice = users.create_user("alice", "alice@example.org", PASSWORD)
    bob = users.create_user("bob", "bob@example.org", PASSWORD, first_name="Bob")
    team = Team.objects.create(name="Research")
    Membership.objects.create(team=team, user=alice, role=Membership.Role.ADMIN)
    Membership.objects.create(team=team, user=bob)

    def conversation(owner: Any, title: str, question: str, **fields: Any) -> Any:
        made = Conversation.objects.create(
            owner=owner, model_profile=profile, title=title, **fields
        )
        Message.objects.append_branch(
            [
                Message(conversation=made, role="user", content=question),
                Message(
                    conversation=made,
                    role="assistant",
                    content=ANSWER,
                    thinking="The user wants a sorted copy; mention stability.",
                    thinking_ms=2400,
                    model_tag=profile.tag,
                ),
            ]
        )
        return made

    work = Folder.objects.create(owner=alice, name="Work")
    chat = conversation(alice, "Sorting a list in Python", "How do I sort a list?")
    conversation(alice, "Filed away", "What is a folder?", folder=work)
    conversation(alice, "An old question", "Still there?", archived_at=timezone.now())
    shared = conversation(bob, "Team notes on sorting", "Which sort is stable?")
    team.conversations.add(shared)

    _, token = ShareLink.create_for(chat)
    gone, gone_token = ShareLink.create_for(chat)
    ShareLink.objects.filter(pk=gone.pk).update(revoked_at=timezone.now())
    _, invitation = Invitation.create_with_token(
        created_by=admin, email="carol@example.org", team=team
    )
    used, used_token = Invitation.create_with_token(created_by=admin, team=team)
    Invitation.objects.filter(pk=used.pk).update(used_at=timezone.now(), used_by=bob)
    ApiKey.issue(alice, "Scripts")
    AuditEvent.record(AuditEvent.Kind.SIGN_IN, subject=alice, address="192.0.2.1")

    c = chat.get_absolute_url()
    return [
        Stop("sign-in", "/login/", None),
        Stop("sign-in-errors", "/login/", None, _sign_in_errors),
        Stop("shared-link", f"/s/{token}/", None),
        Stop("share-gone", f"/s/{gone_token}/", None),
        Stop("invitation", f"/invite/{invitation}/", None),
        Stop("invitation-used", f"/invite/{used_token}/", None),
        Stop("home", "/", "alice"),
        Stop("home-model-picker", "/", "alice", _open_model_picker),
        Stop("conversation", c, "alice"),
        Stop("model-picker", c, "alice", _open_model_picker),
        Stop("shortcuts-dialog", c, "alice", _open_shortcuts),
        Stop("settings-drawer", c, "alice", _open_settings),
        Stop("share-dialog", c, "alice", _open_share_dialog),
        Stop("share-dialog-new-link", c, "alice", _make_share_link),
        Stop("settings-page", f"{c}settings/", "alice"),
        Stop("my-links", "/links/", "alice"),
        Stop("search-page", "/search/?q=sort", "alice"),
        Stop("search-dialog", c, "alice", _open_search_dialog),
        Stop("archived", "/sidebar/archived/", "alice"),
        Stop("move", f"{c}move/", "alice"),
        Stop("rename", f"{c}rename/", "alice"),
        Stop("folder-form", "/folders/new/", "alice"),
        Stop("account", "/account/", "alice"),
        Stop("account-new-key", "/account/", "alice", _new_api_key),
        Stop("password-change", "/account/password/", "alice"),
        Stop("invitation-signed-in", f"/invite/{invitation}/", "alice"),
        Stop("team-home", "/team/", "alice"),
        Stop("team-manage", f"/team/{team.pk}/manage/", "alice"),
        Stop("team-conversation", f"/team/c/{shared.pk}/", "alice"),
        Stop("team-forbidden", f"/team/{team.pk}/manage/", "bob"),
        Stop("staff-throughput", "/admin/stats/throughput/", "admin"),
        Stop("staff-model-servers", "/admin/stats/model-servers/", "admin"),
        Stop("staff-audit-log", "/admin/stats/audit/", "admin"),
        Stop("admin-index", "/admin/", "admin"),
        Stop("admin-change-list", "/admin/chat/conversation/", "admin"),
        Stop("admin-change-form", f"/admin/chat/team/{team.pk}/change/", "admin"),
        Stop("admin-invitation-made", "/admin/chat/invitation/add/", "admin",
             _new_invitation),
    ]  # fmt: skip


OIDC_FAILED = Stop("oidc-failed", "/oidc/callback/?state=unknown", None)


def set_theme(theme: str) -> None:
    """Every user's theme setting (`html[data-theme]`), as on the user page."""
    from django.contrib.auth import get_user_model

    from chat.models import UserSettings

    for user in get_user_model().objects.all():
        UserSettings.objects.update_or_create(user=user, defaults={"theme": theme})


def session_key(username: str) -> str:
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return str(client.session.session_key)


# ---------------------------------------------------------------- the walk


def walk(
    context: Any, base_url: str, stops: list[Stop], look: Callable[[Any, Stop], None]
) -> Iterator[Stop]:
    """Visit each stop in `context` as its person, then `look(page, stop)`.
    Yields each stop once it was looked at."""
    from django.conf import settings

    keys: dict[str, str] = {}
    page = context.new_page()
    traffic = Traffic(page)
    try:
        for stop in stops:
            context.clear_cookies()
            if stop.who is not None:
                if stop.who not in keys:
                    keys[stop.who] = session_key(stop.who)
                cookie = {"name": settings.SESSION_COOKIE_NAME, "value": keys[stop.who]}
                context.add_cookies([{**cookie, "url": base_url}])
            try:
                page.goto(base_url + stop.path)
                traffic.settle()
                if stop.then is not None:
                    stop.then(page)
                look(page, stop)
            except Exception as exc:
                exc.add_note(f"at the tour's stop {stop.name!r} ({stop.path})")
                raise
            yield stop
    finally:
        page.close()


def visit(
    context: Any, base_url: str, stops: list[Stop], look: Callable[[Any, Stop], None]
) -> None:
    """`walk` every stop, then close `context` (also when a stop fails)."""
    try:
        for _ in walk(context, base_url, stops, look):
            pass
    finally:
        context.close()
