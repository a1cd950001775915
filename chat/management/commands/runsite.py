"""Start the site the way `make run` does: Daphne, and the demo model when no
Ollama answers."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import signal
import subprocess
import sys
import time
from datetime import timedelta
from typing import Any

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from chat.live import frames
from chat.models import Message
from chat.ops.discovery import fetch_ollama_models, sync_profiles
from chat.upstream import UpstreamError

DEMO_FLAGS = ["--tps", "60", "--ttft-ms", "350", "--think-tokens", "60"]


class Command(BaseCommand):
    help = "Run chatsite on Daphne, with the bundled demo model if no Ollama answers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--simulator-port", type=int, default=11435)
        parser.add_argument(
            "--no-simulator", action="store_true", help="Never start the demo model."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # One process owns every generation here, so nothing can still be
        # streaming from before this start.
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
            host, port = options["host"], str(options["port"])
            size = str(frames.max_frame_bytes())
            daphne = _spawn(
                ["-m", "daphne", "-b", host, "-p", port]
                + ["--websocket-max-message-size", size]
                + ["--websocket-max-frame-size", size]
                + ["chatsite.asgi:application"]
            )
            children.append(daphne)
            self.stdout.write(f"chatsite is running at http://{host}:{port}/")
            daphne.wait()
        except KeyboardInterrupt:
            pass
        finally:
            for child in children:
                child.terminate()
            for child in children:
                child.wait(10)

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


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _die_with_parent() -> None:
    # Linux: the child is sent SIGTERM if runsite dies, even by SIGKILL.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def _spawn(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *args], cwd=settings.BASE_DIR, preexec_fn=_die_with_parent
    )
