"""The browser bench's site: the simulator, one Daphne process and the floor."""

from __future__ import annotations

import os
import subprocess
import tempfile
from typing import Any

import httpx

from bench.common import (
    SHELL_SIGN_IN,
    deployed,
    free_port,
    manage,
    spawn,
    wait_until_up,
)

MODEL = "llama-demo:3b"  # the simulator's model without thinking


class Site:
    """A simulator, one Daphne process on a throwaway SQLite database, and the
    floor: a bare relay to the same simulator (``bench/floor.py``)."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="chatsite-browser-bench-")
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{self.tmp.name}/bench.sqlite3",
            # Its pages' files are collected first (`start`), as on a host.
            **deployed(),
            "DJANGO_SETTINGS_MODULE": "chatsite.settings",
        }
        self.env.pop("REDIS_URL", None)
        self.sim_port, self.web_port = free_port(), free_port()
        self.floor_port = free_port()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.session_key = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def floor_url(self) -> str:
        return f"http://127.0.0.1:{self.floor_port}"

    @property
    def sim_url(self) -> str:
        return f"http://127.0.0.1:{self.sim_port}"

    def start(self) -> None:
        self.manage("migrate", "--noinput", "-v", "0")
        self.manage("collectstatic", "--noinput", "-v", "0")
        self.processes += [
            spawn(self.env, "manage.py", "simulate_ollama", "--port",
                  str(self.sim_port), "--record-times", "--think-tokens", "0",
                  "--ttft-ms", "0"),
            spawn(self.env, "-m", "chatsite.serve", "-b", "127.0.0.1", "-p",
                  str(self.web_port)),
            spawn(self.env, "-m", "bench.floor", "--port", str(self.floor_port),
                  "--upstream", self.sim_url, "--model", MODEL),
        ]  # fmt: skip
        wait_until_up(f"{self.sim_url}/api/version")
        wait_until_up(f"{self.url}/login/")
        wait_until_up(self.floor_url)
        self.session_key = self.shell(
            "from django.contrib.auth.models import User;"
            + SHELL_SIGN_IN
            + "from chat.models import ModelProfile, SiteDefaults;"
            "u = User.objects.create_user('bench', password='x');"
            # One user streams every answer: no per-user limit.
            "SiteDefaults(generations_per_user=0).save();"
            f"ModelProfile.objects.create(tag={MODEL!r}, base_url={self.sim_url!r});"
            "print(signed_in(u))"
        )

    def pids(self) -> set[int]:
        return {p.pid for p in self.processes}

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(10)
        self.tmp.cleanup()

    def manage(self, *args: str) -> str:
        return manage(self.env, *args).strip()

    def shell(self, script: str) -> str:
        return self.manage("shell", "-v", "0", "-c", script)

    def new_conversations(self, count: int, history: int = 0) -> list[int]:
        script = (
            "from django.contrib.auth.models import User;"
            "from chat.models import Conversation, Message, ModelProfile;"
            "from bench.browser.answers import history_messages;"
            "u = User.objects.get(username='bench'); p = ModelProfile.objects.get();"
            f"new = [Conversation.objects.create(owner=u, model_profile=p, "
            f"title=f'bench {{i}}') for i in range({count})];"
            f"[Message.objects.bulk_create(history_messages(c.pk, {history})) "
            "for c in new];"
            "print(' '.join(str(c.pk) for c in new))"
        )
        return [int(pk) for pk in self.shell(script).split()]

    def configure(self, **changes: Any) -> None:
        httpx.post(f"{self.sim_url}/_sim/reset").raise_for_status()
        httpx.post(f"{self.sim_url}/_sim/config", json=changes).raise_for_status()

    def sim_log(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.sim_url}/_sim/log").json()["requests"])
