"""A PostgreSQL outage longer than ORPHAN_AFTER does not make another process's
orphan sweep interrupt a live answer (chat.live.checkpoints: a sweep judges only
once its process has reached the database for ORPHAN_AFTER).

A cluster of its own, stopped and started again by the test; two Daphne
processes on it and the session's Redis: the answer streams from one, a viewer
watches from the other.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import psycopg
import pytest

from chat.live.checkpoints import ORPHAN_AFTER
from tests import servers
from tests.communicators import text_of
from tests.daphnes import ROOT, Daphne, daphne_env, open_socket, send, start_all

OUTAGE_SECONDS = ORPHAN_AFTER.total_seconds() + 3
# The owner is also held still this long once the database is back, so that on
# the old code another process's sweep got there before the owner's heartbeat.
OWNER_HELD_SECONDS = 6
WAIT = 120  # seconds: a bound for a loaded machine, not a budget

SETUP = """
import json
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from chat.models import Conversation, ModelProfile
user = get_user_model().objects.create_user("alice", password="not-used-0")
profile = ModelProfile.objects.create(
    tag="qwen3-demo:8b", base_url=%r, supports_thinking=True,
    context_length=8192, is_demo=True,
)
conversation = Conversation.objects.create(owner=user, model_profile=profile)
client = Client()
client.force_login(user)
name = settings.SESSION_COOKIE_NAME
print(json.dumps({"cookie": f"{name}={client.cookies[name].value}",
                  "conversation": conversation.pk}))
"""


@pytest.fixture
def own_postgres(test_mode):
    if test_mode == "sqlite":
        pytest.skip("needs PostgreSQL and Redis")
    server = servers._start_first("postgres", servers._pg_candidates())
    try:
        with psycopg.connect(server.dsn, autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {servers.PG_DB_NAME}")
        yield server
    finally:
        server.stop()


def stop_postgres(server: servers.Server) -> None:
    """A fast shutdown that keeps the cluster's files."""
    assert server.proc is not None
    server.proc.send_signal(signal.SIGINT)
    server.proc.wait(30)


def start_postgres_again(server: servers.Server) -> None:
    assert server.proc is not None
    server.proc = subprocess.Popen(
        server.proc.args,
        stdout=server._log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=servers._die_with_parent(signal.SIGQUIT),
        **servers._drop_privileges(),
    )
    deadline = time.monotonic() + WAIT
    while True:
        try:
            psycopg.connect(server.dsn, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            assert time.monotonic() < deadline, "postgres did not start again"
            time.sleep(0.05)


def stored_answer(server: servers.Server, message_id: int) -> tuple[str, str] | None:
    """The answer's status and content, once its row is committed."""
    dsn = server.dsn.replace("dbname=postgres", f"dbname={servers.PG_DB_NAME}")
    with psycopg.connect(dsn) as connection:
        row = connection.execute(
            "SELECT status, content FROM chat_message WHERE id = %s", [message_id]
        ).fetchone()
    return None if row is None else (row[0], row[1])


async def collect(ws, frames: list[dict]) -> None:
    """Every frame until the answer's final message."""
    async for raw in ws:
        frame = json.loads(raw)
        frames.append(frame)
        if frame["type"] == "message" and frame["message"]["role"] == "assistant":
            return


async def test_an_outage_longer_than_orphan_after_interrupts_no_live_answer(
    own_postgres, simulator, tmp_path
):
    env = daphne_env(database_url=own_postgres.url)
    manage = [sys.executable, "manage.py"]
    await asyncio.to_thread(
        subprocess.run, [*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True
    )
    made = await asyncio.to_thread(
        subprocess.run,
        [*manage, "shell", "-c", SETUP % simulator.url],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    setup = json.loads(made.stdout.decode().strip().splitlines()[-1])
    conversation = SimpleNamespace(pk=setup["conversation"])
    cookie = setup["cookie"]

    simulator.config.tps = 30
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 1200  # about 40 s
    owner_daphne, viewer_daphne = await asyncio.to_thread(
        start_all, [Daphne(env, tmp_path / f"daphne-{i}.log") for i in range(2)]
    )
    try:
        owner = await open_socket(owner_daphne, conversation, cookie)
        viewer = await open_socket(viewer_daphne, conversation, cookie)
        await send(owner)
        mine: list[dict] = []
        theirs: list[dict] = []
        reading = asyncio.gather(collect(owner, mine), collect(viewer, theirs))
        deadline = time.monotonic() + WAIT
        while not any(f["type"] == "content" for f in theirs):
            assert time.monotonic() < deadline, "the viewer got no text"
            await asyncio.sleep(0.05)
        message_id = next(f["message_id"] for f in mine if f["type"] == "start")
        # And its turn committed: a turn is shown, and its answer streams, before
        # its commit (docs/latency.md, rule 8); a database gone before that takes
        # the turn back (the page gets its text again), which is not this test's
        # outage. Under load the first tokens can come first.
        while await asyncio.to_thread(stored_answer, own_postgres, message_id) is None:
            assert time.monotonic() < deadline, "the turn was not stored"
            await asyncio.sleep(0.05)

        await asyncio.to_thread(stop_postgres, own_postgres)
        await asyncio.sleep(OUTAGE_SECONDS)  # the fault itself: its length
        assert owner_daphne.process is not None
        owner_daphne.process.send_signal(signal.SIGSTOP)
        try:
            await asyncio.to_thread(start_postgres_again, own_postgres)
            await asyncio.sleep(OWNER_HELD_SECONDS)
        finally:
            owner_daphne.process.send_signal(signal.SIGCONT)

        await asyncio.wait_for(reading, WAIT)
        await owner.close()
        await viewer.close()
    finally:
        for daphne in (owner_daphne, viewer_daphne):
            if daphne.process is not None:
                daphne.process.send_signal(signal.SIGCONT)
            daphne.stop()

    stored = stored_answer(own_postgres, message_id)
    assert stored is not None
    status, content = stored
    assert status == "done"
    told = [f["status"] for f in theirs if f["type"] == "done"]
    told += [
        f["message"]["status"]
        for f in theirs
        if f["type"] == "message" and f["message"]["role"] == "assistant"
    ]
    assert told == ["done", "done"], told
    assert text_of(mine, "content") == content
