"""Run as ``python -m tests.transfer.sqlite_import <chats>`` with DATABASE_URL
naming a fresh SQLite file: migrates it, then, through the site's own request
handling on one event loop (as in one Daphne process), imports an Open WebUI
export of that many chats (ten messages each) for one user while another
starts a conversation with a question once the import is under way. Prints
the JSON summary of the timings."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import time

import django

DEADLINE = 60.0


def export(chats: int) -> bytes:
    items = []
    for n in range(chats):
        tree, parent = {}, None
        for m in range(10):
            node = f"{n}-{m}"
            role = "user" if m % 2 == 0 else "assistant"
            tree[node] = {"id": node, "parentId": parent, "role": role}
            tree[node].update(content=f"message {m} of chat {n} " * 20)
            tree[node].update(timestamp=1_700_000_000 + m)
            parent = node
        history = {"currentId": parent, "messages": tree}
        items.append(
            {"id": f"chat-{n}", "title": f"Chat {n}", "chat": {"history": history}}
        )
    return json.dumps(items).encode()


async def run(chats: int) -> dict[str, object]:
    from django.contrib.auth import get_user_model
    from django.test import AsyncClient

    from chat.models import Conversation

    users = get_user_model().objects
    alice = await users.acreate_user("alice", password="x")
    bob = await users.acreate_user("bob", password="x")
    importer, asker = (
        AsyncClient(SERVER_NAME="localhost"),
        AsyncClient(SERVER_NAME="localhost"),
    )
    await importer.aforce_login(alice)
    await asker.aforce_login(bob)
    file = io.BytesIO(export(chats))
    file.name = "export.json"
    started = time.perf_counter()
    upload = asyncio.create_task(
        importer.post(
            "/account/import/",
            {"file": file},
            headers={"x-requested-with": "XMLHttpRequest"},
        )
    )
    # Wait for the work: the import's first conversations stored, or its end.
    deadline = time.monotonic() + DEADLINE
    while not await Conversation.objects.filter(owner=alice).aexists():
        if upload.done() or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.01)
    under_way = not upload.done()
    asked = time.perf_counter()
    response = await asker.post("/c/new/", {"content": "Is the import blocking me?"})
    waited = time.perf_counter() - asked
    still_importing = not upload.done()
    result = await upload
    return {
        "under_way": under_way,
        "still_importing": still_importing,
        "asked_status": response.status_code,
        "asked_seconds": round(waited, 3),
        "import_status": result.status_code,
        "import_seconds": round(time.perf_counter() - started, 3),
        "imported": await Conversation.objects.filter(owner=alice).acount(),
    }


def main(chats: int) -> dict[str, object]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatsite.settings")
    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]

    call_command("migrate", verbosity=0)
    return asyncio.run(run(chats))


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main(int(sys.argv[1]))) + "\n")
