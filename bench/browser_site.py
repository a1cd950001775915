"""The site `bench.browser` measures (a simulator and a Daphne process, their
users and conversations), and what each process costs: Chromium's by kind,
read from /proc."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
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
            "from bench.browser_texts import history_messages;"
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


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes (Linux /proc)."""
    total = 0
    for pid in pids:
        try:
            fields = _stat(pid)
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def descendants(root: int) -> list[int]:
    """This process's children, grandchildren, ... (the browser's processes)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents.setdefault(int(_stat(int(entry.name))[1]), []).append(
                    int(entry.name)
                )
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
    out, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def chromium_kind(pid: int) -> str:
    """A Chromium process's ``--type`` (renderer, gpu-process, ...); "main" for the
    browser process. Chromium rewrites its command line, so split on spaces."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split()
    except OSError:
        return "gone"
    kind = next((w[7:] for w in words if w.startswith(b"--type=")), b"main")
    return kind.decode()


def lower_priority(pids: list[int], nice: int) -> None:
    """Renice every thread of these processes (Linux niceness is per thread), so
    that the server's processes win the CPU when the browser would starve them."""
    for pid in pids:
        try:
            threads = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
        except OSError:
            continue
        for tid in threads:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
            except OSError:
                continue  # the thread ended meanwhile


class CpuMeter:
    """CPU seconds used by Daphne, the simulator and the browser over a span (the
    browser's also by process kind: renderers, the GPU process that composites
    in software here, the main process)."""

    def __init__(self, site: Site, floor: bool = False) -> None:
        browser = [pid for pid in descendants(os.getpid()) if pid not in site.pids()]
        self.groups = {
            # The server's column: Daphne, or the bare relay in the floor's rows.
            "daphne": [site.processes[2 if floor else 1].pid],
            "simulator": [site.processes[0].pid],
            "browser": browser,
            "renderers": [p for p in browser if chromium_kind(p) == "renderer"],
            "gpu": [p for p in browser if chromium_kind(p) == "gpu-process"],
        }
        self.before = {k: cpu_seconds(v) for k, v in self.groups.items()}

    def used(self) -> dict[str, float]:
        return {
            f"cpu_{k}_s": cpu_seconds(v) - self.before[k]
            for k, v in self.groups.items()
        }
