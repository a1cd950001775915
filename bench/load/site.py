"""The load bench's site: PostgreSQL, Redis, the simulator and one
production-settings Daphne, and the team whose sockets talk to it."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench.common import (
    ROOT,
    SHELL_SIGN_IN,
    free_port,
    manage,
    rss_mib,
    spawn_simulator,
    terminate,
    wait_until_up,
)

USERS = 20
SOCKETS_PER_USER = 10
TPS = 40.0
ANSWER_TOKENS = 200  # 5 s at 40 tok/s: each socket asks several times


def answer_text(tokens: int) -> str:
    return " ".join(f"w{i}" for i in range(tokens))


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
        from tests.support.plugins import servers
        from tests.support.services import postgres

        servers.start_servers()  # exports DATABASE_URL and REDIS_URL
        if servers.STATE.postgres is None or servers.STATE.redis is None:
            raise SystemExit(
                "bench.load needs PostgreSQL and Redis: "
                + "; ".join(servers.STATE.notes)
            )
        if servers.STATE.postgres.managed:
            with psycopg.connect(servers.STATE.postgres.dsn, autocommit=True) as db:
                db.execute(f"CREATE DATABASE {postgres.PG_DB_NAME}")
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
        from tests.support.plugins import servers

        terminate(self.processes)
        servers.stop_servers()
        self.tmp.cleanup()


def process_figures(pid: int) -> dict[str, float]:
    return {"rss_mib": rss_mib(pid), "fds": len(os.listdir(f"/proc/{pid}/fd"))}
