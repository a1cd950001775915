"""`make run`'s command, as a real process: Daphne plus the demo model."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(
    url: str, process: subprocess.Popen, timeout: float = 60
) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return httpx.get(url, timeout=2)
        except httpx.HTTPError:
            assert process.poll() is None, "runsite exited early"
            assert time.monotonic() < deadline, f"{url} never answered"
            time.sleep(0.2)


@pytest.mark.smoke
def test_runsite_starts_the_site_and_the_demo_model_without_ollama(tmp_path):
    web, demo = free_port(), free_port()
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path}/site.sqlite3",
        "OLLAMA_BASE_URL": "http://127.0.0.1:9",
    }
    env.pop("REDIS_URL", None)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    process = subprocess.Popen(
        [*manage, "runsite", "--port", str(web), "--simulator-port", str(demo)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        first = wait_for(f"http://127.0.0.1:{web}/", process)
        assert first.status_code == 302 and first.headers["location"] == "/setup/"
        assert httpx.get(f"http://127.0.0.1:{demo}/api/version").status_code == 200
        with sqlite3.connect(tmp_path / "site.sqlite3") as db:
            rows = db.execute(
                "select tag, is_demo, supports_thinking"
                " from chat_modelprofile order by tag"
            ).fetchall()
        assert rows == [("llama-demo:3b", 1, 0), ("qwen3-demo:8b", 1, 1)]
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=20)[0].decode()
    assert "demo model runs at" in output
    # SIGTERM took the children down too: nothing is left listening.
    for port in (web, demo):
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
