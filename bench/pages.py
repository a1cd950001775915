"""Page cost of a very long conversation: its chat, team and shared pages; and
of a deeply branched one: its chat page and a switch between versions.

One conversation of 100,000 messages (``--messages``), made on a throwaway SQLite
database in bulk, shared with a team and by a live link; and one of 200 turns
with 50 versions of turn 100 (each an edit, its answer and nothing below), the
first version shown. Each page is then fetched with Django's test client (the
switch: a POST showing the newest version of turn 100, then back), each in a
fresh process, and the table gives the time to render it, the growth of the
process's peak RSS while it did, the page's size and the messages in it.

Run alone: ``python -m bench.pages [--messages N]``; ``make bench`` runs it too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT

PAGES = ("chat", "team", "shared", "branched", "switch")
DEPTH, WIDTH = 200, 50  # the branched conversation's turns, and versions at its middle
ANSWER = (
    "Here is **the answer** to question {n}, with `code` and a list:\n\n"
    "- one\n- two\n\n```python\nprint({n})\n```\n"
)


def _environment(database: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "chatsite.settings",
        "DATABASE_URL": f"sqlite:///{database}",
        "REDIS_URL": "",
        "ALLOWED_HOSTS": "testserver",
    }


def _setup_django() -> None:
    import django

    sys.path.insert(0, str(ROOT))
    django.setup()


def make_conversation(count: int) -> dict[str, str]:
    """The users, the conversation, its team and its link; the pages' URLs."""
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    from chat.models import Conversation, Message, ShareLink, Team

    users = get_user_model().objects
    owner = users.create_user("owner", password="bench-password-123")
    reader = users.create_user("reader", password="bench-password-123")
    conversation = Conversation.objects.create(owner=owner, title="A long one")
    team = Team.objects.create(name="bench")
    team.members.add(owner, reader)
    team.conversations.add(conversation)
    Message.objects.append_branch([_message(conversation, n) for n in range(count)])
    _, token = ShareLink.create_for(conversation, mode=ShareLink.Mode.LIVE)
    branched = Conversation.objects.create(owner=owner, title="A branched one")
    rows = Message.objects.append_branch(
        [_message(branched, n) for n in range(2 * DEPTH)]
    )
    middle = rows[DEPTH]  # turn 100's question
    for _ in range(WIDTH - 1):
        question, _ = Message.objects.append_branch(
            [_message(branched, n, replaced=True) for n in (DEPTH, DEPTH + 1)]
        )
        question.parent_id = middle.parent_id
        question.save(update_fields=["parent"])
    return {
        "chat": conversation.get_absolute_url(),
        "team": f"/team/c/{conversation.pk}/",
        "shared": f"/s/{token}/",
        "branched": branched.get_absolute_url(),
        "switch": f"{branched.get_absolute_url()}messages/{question.pk}/show/"
        f" {branched.get_absolute_url()}messages/{middle.pk}/show/",
    }


def _message(conversation: Any, n: int, **fields: Any) -> Any:
    from chat.models import Message

    return Message(
        conversation=conversation,
        role=Message.Role.ASSISTANT if n % 2 else Message.Role.USER,
        content=ANSWER.format(n=n) if n % 2 else f"Question {n}?",
        model_tag="bench",
        **fields,
    )


def measure(url: str, as_user: str) -> dict[str, Any]:
    """Fetch one page (in this fresh process): seconds, peak RSS growth, size."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    if as_user:
        client.force_login(get_user_model().objects.get(username=as_user))
    client.get("/")  # imports and template loading are not the page's cost
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    if " " in url:  # a version switch there and back: the mean of the two
        there, back = url.split()
        client.post(there)
        response = client.post(back)
        seconds = (time.perf_counter() - started) / 2
    else:
        response = client.get(url)
        seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    body = response.content
    return {
        "status": response.status_code,
        "seconds": seconds,
        "rss_growth_mib": (after - before) / 1024,
        "page_kib": len(body) / 1024,
        "messages_in_page": body.count(b" data-message-id=")
        or body.count(b'\\"type\\": \\"message\\"')
        or body.count(b'"type": "message"'),
    }


def run(count: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as folder:
        env = _environment(Path(folder) / "bench.sqlite3")
        made = subprocess.run(
            [sys.executable, "-m", "bench.pages", "--make", str(count)],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        urls = json.loads(made.stdout)
        rows = []
        for page in PAGES:
            user = {"team": "reader", "shared": ""}.get(page, "owner")
            done = subprocess.run(
                [sys.executable, "-m", "bench.pages", "--measure", urls[page], user],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            messages = (
                count if page in ("chat", "team", "shared") else 2 * (DEPTH + WIDTH - 1)
            )
            rows.append({"page": page, "messages": messages, **json.loads(done.stdout)})
        return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print("Page render of one long conversation (Django test client, SQLite):")
    print(
        f"{'page':<8}{'messages':>10}{'status':>8}{'render s':>10}"
        f"{'RSS+ MiB':>10}{'page KiB':>10}{'shown':>8}"
    )
    for row in rows:
        print(
            f"{row['page']:<8}{row['messages']:>10}{row['status']:>8}"
            f"{row['seconds']:>10.3f}{row['rss_growth_mib']:>10.1f}"
            f"{row['page_kib']:>10.1f}{row['messages_in_page']:>8}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--make", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make is not None:
        _setup_django()
        print(json.dumps(make_conversation(args.make)))
    elif args.measure is not None:
        _setup_django()
        print(json.dumps(measure(*args.measure)))
    else:
        results = run(args.messages)
        print_table(results)
        out = Path(__file__).resolve().parent / "results"
        out.mkdir(exist_ok=True)
        (out / "pages.json").write_text(json.dumps(results, indent=2))
