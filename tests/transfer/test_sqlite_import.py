"""An import on the zero-config SQLite site (one file, one writer at a time)
leaves everyone else's questions answered while it is stored (issue 40: an
import made other users' questions wait 5-8 s). A Daphne process of its own
on a SQLite file, whatever the suite's database (so not `smoke`: the SQLite
rerun would only repeat it)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from tests.support.services.daphnes import ROOT, Daphne, frames_until, open_socket, send
from tests.support.waiting import until
from tests.transfer.conftest import open_webui_chats

CHATS = 2000  # ten messages each: about 8 MB of Open WebUI export

# Run by the site's `manage.py shell` on the new file: its tables, the two
# accounts, the model that answers bob (the simulator), bob's conversation and
# both sessions.
SETUP = """
import json
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.test import Client
from chat.models import Conversation, ModelProfile
call_command("migrate", verbosity=0)
users = get_user_model().objects
alice = users.create_user("alice", password="x")
bob = users.create_user("bob", password="x")
profile = ModelProfile.objects.create(tag="qwen3-demo:8b", base_url=URL)
asked = Conversation.objects.create(owner=bob, model_profile=profile)
sessions = {}
for user in (alice, bob):
    client = Client()
    client.force_login(user)
    sessions[user.username] = client.cookies["sessionid"].value
print(json.dumps({"conversation": asked.pk, **sessions}))
"""


@pytest.fixture
def sqlite_site(tmp_path: Path, simulator):
    """A migrated SQLite file with alice and bob, and a Daphne process on it."""
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path}/site.sqlite3",
        "DJANGO_SETTINGS_MODULE": "chatsite.settings",
        "OLLAMA_BASE_URL": "http://127.0.0.1:9",
    }
    for name in ("REDIS_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"):
        env.pop(name, None)
    made = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            f"URL = {simulator.url!r}" + SETUP,
        ],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    site = json.loads(made.stdout.splitlines()[-1])
    server = Daphne(env, tmp_path / "daphne.log")
    try:
        server.start()
        yield SimpleNamespace(server=server, database=tmp_path / "site.sqlite3", **site)
    finally:
        server.stop(signal.SIGKILL)


def counted(database: Path, sql: str) -> int:
    """A count read from the site's file beside it (WAL: never blocked)."""
    with sqlite3.connect(database, timeout=20) as db:
        return int(db.execute(sql).fetchone()[0])


ALICES = (
    "SELECT count(*) FROM chat_conversation WHERE owner_id ="
    " (SELECT id FROM auth_user WHERE username = 'alice')"
)


@pytest.fixture
async def importing(sqlite_site: SimpleNamespace) -> AsyncIterator[asyncio.Task]:
    """Alice's upload of an export of CHATS chats, once the import is storing
    them (its first batch committed) and not yet done."""
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{sqlite_site.server.port}",
        cookies={"sessionid": sqlite_site.alice},
        timeout=300,
    ) as alice:
        yield await _storing(sqlite_site, alice)


async def _storing(
    site: SimpleNamespace, alice: httpx.AsyncClient
) -> asyncio.Task[httpx.Response]:
    raw = await asyncio.to_thread(open_webui_chats, CHATS)
    await alice.get("/account/")  # the CSRF cookie
    upload = asyncio.create_task(
        alice.post(
            "/account/import/",
            data={"csrfmiddlewaretoken": alice.cookies["csrftoken"]},
            files={"file": ("export.json", raw, "application/json")},
            headers={"X-Requested-With": "XMLHttpRequest"},
        )
    )

    def stored() -> bool:
        return upload.done() or counted(site.database, ALICES) > 0

    await until(stored, "the import never stored a conversation", timeout=120)
    assert not upload.done(), "the import stored nothing until it ended"
    return upload


async def test_another_users_question_is_answered_while_an_import_is_stored(
    sqlite_site, importing
):
    site, upload = sqlite_site, importing
    conversation = SimpleNamespace(pk=site.conversation)
    ws = await open_socket(site.server, conversation, f"sessionid={site.bob}")
    await send(ws, "Is the import holding me up?")
    answered = await frames_until(ws, "done", timeout=120)
    await ws.close()
    assert answered[-1]["status"] == "done"
    # Answered in full before the import's last batch was stored.
    assert not upload.done(), "bob's answer came after the import ended"
    response = await upload
    assert response.status_code == 200, response.text
    assert counted(site.database, ALICES) == CHATS
    assert counted(site.database, "SELECT count(*) FROM chat_message") == (
        CHATS * 10 + 2
    )


async def test_an_import_whose_requester_goes_away_removes_what_it_stored(
    sqlite_site, importing
):
    importing.cancel()  # its connection closed mid-import

    def removed() -> bool:
        return counted(sqlite_site.database, ALICES) == 0

    await until(removed, "the stored conversations were left", timeout=60)
    assert counted(sqlite_site.database, "SELECT count(*) FROM chat_message") == 0
