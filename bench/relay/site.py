"""The relay bench's site: the simulator and one server process on a
throwaway SQLite database, with nginx or the bare relay in front on request."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import httpx

from bench.common import (
    SHELL_SIGN_IN,
    cmdline,
    deployed,
    descendants,
    free_port,
    manage,
    spawn,
    spawn_simulator,
    terminate,
    wait_until_up,
)

# The ASGI servers Channels runs under, as `python -m bench --server NAME` starts
# them: one process (one worker) on the site's port. Daphne is the default;
# uvicorn and granian are measured against it (not in requirements: install
# them to compare, `pip install uvicorn httptools granian`).
SERVERS: dict[str, list[str]] = {
    "daphne": ["-m", "chatsite.serve", "-b", "127.0.0.1", "-p", "{port}"],
    "uvicorn": ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}"]
    + ["--ws", "websockets", "--http", "httptools", "--lifespan", "off"]
    + ["--no-access-log", "--log-level", "warning", "chatsite.asgi:application"],
    "granian": ["-m", "granian", "--interface", "asginl", "--host", "127.0.0.1"]
    + ["--port", "{port}", "--workers", "1", "--http", "1", "--loop", "asyncio"]
    + ["--log-level", "warning", "--no-access-log", "chatsite.asgi:application"],
}


class Site:
    """A simulator and one server process (Daphne unless `server` names another
    of SERVERS) on a throwaway SQLite database."""

    def __init__(self, backend: str = "ollama", server: str = "daphne") -> None:
        self.backend = backend  # the protocol chatsite and the baseline speak
        self.server = server
        self.tmp = tempfile.TemporaryDirectory(prefix="chatsite-bench-")
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{self.tmp.name}/bench.sqlite3",
            **deployed(),
            "DJANGO_SETTINGS_MODULE": "chatsite.settings",
            # 100 API streams at once, and again, from one key: no rate limit.
            "API_REQUESTS_PER_MINUTE": "0",
        }
        self.env.pop("REDIS_URL", None)
        self.sim_port, self.web_port = free_port(), free_port()
        self.processes: list[subprocess.Popen[bytes]] = []
        # tests.support.services.nginx.Nginx, once `start_nginx` ran
        self.nginx: Any = None
        self.floor: subprocess.Popen[bytes] | None = None  # once `start_floor` ran
        self.floor_port = 0

    @property
    def sim_url(self) -> str:
        return f"http://127.0.0.1:{self.sim_port}"

    @property
    def profile_url(self) -> str:
        return self.sim_url + ("/v1" if self.backend == "openai" else "")

    def start(self) -> None:
        manage(self.env, "migrate", "--noinput", "-v", "0")
        self.processes.append(
            spawn_simulator(self.env, self.sim_port, "--record-times")
        )
        self.processes.append(
            spawn(
                self.env,
                *(arg.format(port=self.web_port) for arg in SERVERS[self.server]),
            )
        )
        wait_until_up(f"{self.sim_url}/api/version")
        # /healthz: with DEBUG off, pages need collectstatic's manifest.
        wait_until_up(f"http://127.0.0.1:{self.web_port}/healthz")
        self.cookie, self.api_key = self._setup_data()

    def start_nginx(self) -> int:
        """Debian's nginx with the shipped deploy/nginx.conf in front of the
        Daphne process (tests/support/services/nginx.py); its port."""
        from tests.support.services.nginx import Nginx, render

        directory = Path(self.tmp.name) / "nginx"
        directory.mkdir()
        port = free_port()
        self.nginx = Nginx(directory, port, render(directory, port, [self.web_port]))
        self.nginx.start()
        return port

    def start_floor(self) -> None:
        """The bare relay (bench/floor.py) on the same simulator."""
        self.floor_port = free_port()
        self.floor = spawn(
            self.env,
            *("-m", "bench.floor", "--port", str(self.floor_port)),
            *("--upstream", self.sim_url, "--model", "llama-demo:3b"),
        )
        self.processes.append(self.floor)
        wait_until_up(f"http://127.0.0.1:{self.floor_port}/")

    @property
    def daphne_pid(self) -> int:
        return self.processes[1].pid

    @property
    def server_pids(self) -> list[int]:
        """The processes serving the site: the server's, and its children's
        (granian serves from a worker process)."""
        return [self.daphne_pid, *descendants(self.daphne_pid)]

    @property
    def sim_pid(self) -> int:
        return self.processes[0].pid

    def stop(self) -> None:
        if self.nginx is not None:
            self.nginx.stop()
        # The server's children too (granian's worker, a process pool's
        # workers): killed if still running once the server is gone.
        children = {pid: cmdline(pid) for pid in descendants(self.daphne_pid)}
        terminate(self.processes, wait=10)
        for pid, command in children.items():
            if command and cmdline(pid) == command:  # the same process, not a reuse
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.tmp.cleanup()

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def _setup_data(self) -> tuple[str, str]:
        """The session cookie of the user who asks every question, and an API
        key of theirs."""
        script = (
            "from django.contrib.auth.models import User;"
            + SHELL_SIGN_IN
            + "from chat.models import ApiKey, ModelProfile, SiteDefaults;"
            "u = User.objects.create_user('bench', password='x');"
            # One user streams every answer: no per-user limit.
            "SiteDefaults(generations_per_user=0).save();"
            "ModelProfile.objects.create(tag='llama-demo:3b', "
            f"backend='{self.backend}', base_url='{self.profile_url}');"
            "print(signed_in(u), ApiKey.issue(u, 'bench')[1])"
        )
        session, key = manage(self.env, "shell", "-v", "0", "-c", script).split()
        return "sessionid=" + session, key

    def sign_in(self, names: list[str]) -> list[str]:
        """New users of these names, each signed in: their session cookies."""
        script = (
            "from django.contrib.auth.models import User;"
            + SHELL_SIGN_IN
            + "print(' '.join(signed_in(User.objects.create_user(n, password='x')) "
            f"for n in {names!r}))"
        )
        keys = manage(self.env, "shell", "-v", "0", "-c", script).split()
        return ["sessionid=" + key for key in keys]

    def new_conversations(self, count: int) -> list[int]:
        script = (
            "from django.contrib.auth.models import User;"
            "from chat.models import Conversation, ModelProfile;"
            "u = User.objects.get(username='bench'); p = ModelProfile.objects.get();"
            "new = lambda: Conversation.objects.create(owner=u, model_profile=p);"
            f"print(' '.join(str(new().pk) for _ in range({count})))"
        )
        return [
            int(pk) for pk in manage(self.env, "shell", "-v", "0", "-c", script).split()
        ]

    def live_links(self, conversations: list[int]) -> list[str]:
        """A live shared link's token for each conversation."""
        script = (
            "from chat.models import Conversation, ShareLink;"
            "print(' '.join(ShareLink.create_for(c, mode='live')[1] for c in "
            f"Conversation.objects.filter(pk__in={conversations!r}).order_by('pk')))"
        )
        return manage(self.env, "shell", "-v", "0", "-c", script).split()

    def configure(self, **changes: Any) -> None:
        httpx.post(f"{self.sim_url}/_sim/config", json=changes).raise_for_status()
        httpx.post(f"{self.sim_url}/_sim/reset").raise_for_status()
        httpx.post(f"{self.sim_url}/_sim/config", json=changes).raise_for_status()

    def sim_log(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.sim_url}/_sim/log").json()["requests"])
