"""Start the site the way `make run` does: Daphne (one process, or several on
one port), and the demo model when no Ollama answers."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from datetime import timedelta
from typing import Any

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.models import Message
from chat.ops.discovery import fetch_ollama_models, sync_profiles
from chat.upstream import UpstreamError

DEMO_FLAGS = ["--tps", "60", "--ttft-ms", "350", "--think-tokens", "60"]
# A server process that keeps dying soon after its start is a broken setup, not
# bad luck: after this many exits within CRASH_WINDOW seconds, runsite gives up.
CRASHES_TO_GIVE_UP = 5
CRASH_WINDOW = 60.0
SUPERVISE_EVERY = 0.5  # seconds between looks at the server processes


class Command(BaseCommand):
    help = "Run chatsite on Daphne, with the bundled demo model if no Ollama answers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--simulator-port", type=int, default=11435)
        parser.add_argument(
            "--no-simulator", action="store_true", help="Never start the demo model."
        )
        parser.add_argument(
            "--processes",
            type=int,
            default=None,
            metavar="N",
            help="Server processes sharing the port (they need PostgreSQL and "
            "Redis). Default: one per core with DEBUG off and both configured, "
            "else one.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        processes = _processes(options["processes"])
        host, port = options["host"], options["port"]
        # The processes started here own every generation on this database
        # (runsite serves one host; several hosts run Daphne under systemd:
        # deploy/chatsite.service), so nothing can still be streaming from
        # before this start.
        Message.objects.mark_orphans_interrupted(older_than=timedelta(0))
        # SIGTERM, and SIGINT (which a background shell job starts with
        # ignored), end the site and its children cleanly.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, _interrupt)
        children: list[subprocess.Popen[bytes]] = []
        try:
            if not self._sync(settings.OLLAMA_BASE_URL, is_demo=False):
                if options["no_simulator"]:
                    self.stderr.write(f"No Ollama at {settings.OLLAMA_BASE_URL}.")
                else:
                    children.append(self._start_simulator(options["simulator_port"]))
            if processes == 1:
                daphne = _spawn(_daphne_args(["-b", host, "-p", str(port)]))
                children.append(daphne)
                self.stdout.write(f"chatsite is running at http://{host}:{port}/")
                daphne.wait()
            else:
                listener = _listen(host, port)
                self.stdout.write(
                    f"chatsite is running at http://{host}:{port}/ "
                    f"({processes} processes)"
                )
                self._supervise(processes, listener, children)
        except KeyboardInterrupt:
            pass
        finally:
            for child in children:
                child.terminate()
            for child in children:
                child.wait(10)

    def _supervise(
        self,
        count: int,
        listener: socket.socket,
        children: list[subprocess.Popen[bytes]],
    ) -> None:
        """Run `count` Daphne processes on the one listening socket (the kernel
        hands each connection to one of them), starting another whenever one
        exits. Its answers are marked interrupted by the others' orphan sweep
        (chat/live/engine/checkpoints.py), as after any process's death."""
        fd = listener.fileno()

        def start() -> subprocess.Popen[bytes]:
            return _spawn(_daphne_args(["--fd", str(fd)]), pass_fds=(fd,))

        workers = [start() for _ in range(count)]
        children.extend(workers)
        exits: deque[float] = deque(maxlen=CRASHES_TO_GIVE_UP)
        while True:
            time.sleep(SUPERVISE_EVERY)
            for i, worker in enumerate(workers):
                code = worker.poll()
                if code is None:
                    continue
                now = time.monotonic()
                exits.append(now)
                if len(exits) == CRASHES_TO_GIVE_UP and now - exits[0] < CRASH_WINDOW:
                    raise CommandError(
                        f"Server processes exited {CRASHES_TO_GIVE_UP} times within "
                        f"{CRASH_WINDOW:.0f} s; stopping. See the errors above."
                    )
                self.stderr.write(
                    f"Server process {worker.pid} exited ({code}); starting another."
                )
                workers[i] = start()
                children.append(workers[i])

    def _sync(self, base_url: str, *, is_demo: bool) -> bool:
        try:
            models = asyncio.run(fetch_ollama_models(base_url))
        except (UpstreamError, httpx.HTTPError) as exc:
            detail = getattr(exc, "detail", str(exc))
            self.stdout.write(f"Model server {base_url}: {detail}")
            return False
        profiles = sync_profiles(base_url, models, is_demo=is_demo)
        names = ", ".join(p.tag for p in profiles) or "none"
        self.stdout.write(f"Models at {base_url}: {names}")
        return True

    def _start_simulator(self, port: int) -> subprocess.Popen[bytes]:
        url = f"http://127.0.0.1:{port}"
        process = _spawn(
            ["manage.py", "simulate_ollama", "--port", str(port), *DEMO_FLAGS]
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{url}/api/version", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if process.poll() is not None:
                    raise SystemExit("The demo model failed to start.") from None
                time.sleep(0.1)
        self.stdout.write(f"No Ollama answered; the demo model runs at {url}.")
        self._sync(url, is_demo=True)
        return process


def _processes(asked: int | None) -> int:
    """How many server processes: as asked, else one per core where several can
    share the work (production settings, PostgreSQL and Redis), else one."""
    shared = settings.DATABASES["default"][
        "ENGINE"
    ] == "django.db.backends.postgresql" and bool(settings.REDIS_URL)
    if asked is None:
        return (os.cpu_count() or 1) if shared and not settings.DEBUG else 1
    if asked < 1:
        raise CommandError("--processes must be 1 or more.")
    if asked > 1 and not shared:
        # Each process would have its own in-memory channel layer (a tab on one
        # would not hear answers run by another) and SQLite's locks do not
        # make the fair queue's admission global.
        raise CommandError(
            "--processes above 1 needs PostgreSQL and Redis "
            "(DATABASE_URL=postgres://..., REDIS_URL=redis://...)."
        )
    return asked


def _daphne_args(bind: list[str]) -> list[str]:
    return ["-m", "chatsite.serve", *bind]


def _listen(host: str, port: int) -> socket.socket:
    """The port's one listening socket, inherited by every server process
    (Daphne's --fd adopts it as an IPv4 socket)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None and address.version != 4:
        raise CommandError("--processes above 1 needs an IPv4 --host.")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        raise CommandError(f"Cannot listen on {host}:{port}: {exc.strerror}.") from None
    listener.listen(1024)
    listener.set_inheritable(True)
    return listener


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _die_with_parent() -> None:
    # Linux: the child is sent SIGTERM if runsite dies, even by SIGKILL.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def _spawn(args: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=settings.BASE_DIR,
        preexec_fn=_die_with_parent,
        pass_fds=pass_fds,
    )
