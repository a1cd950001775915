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

ROOT = Path(__file__).resolve().parents[2]


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


def daphne_children(parent: int) -> set[int]:
    """The Daphne processes `parent` started (Linux's /proc)."""
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    found = set()
    for pid in children:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:  # exited meanwhile
            continue
        if b"chatsite.serve" in command:
            found.add(int(pid))
    return found


def serving(process: subprocess.Popen, count: int) -> set[int] | None:
    """runsite's Daphne processes once there are `count` of them."""
    assert process.poll() is None, "runsite exited early"
    found = daphne_children(process.pid)
    return found if len(found) == count else None


@pytest.mark.django_db(transaction=True)
def test_several_processes_share_one_port_and_a_dead_one_is_replaced():
    from tests.support.services.daphnes import daphne_env
    from tests.support.waiting import until_sync

    port = free_port()
    env = {**daphne_env(), "OLLAMA_BASE_URL": "http://127.0.0.1:9"}
    command = [sys.executable, "manage.py", "runsite", "--no-simulator"]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--processes", "2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/login/"
    try:
        first = until_sync(lambda: serving(process, 2), "two Daphne processes")
        assert wait_for(url, process).status_code == 200
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        # Another takes its place, and the port keeps answering meanwhile and after.
        assert wait_for(url, process).status_code == 200
        second = until_sync(
            lambda: (found := serving(process, 2)) and victim not in found and found,
            "another Daphne process in place of the killed one",
        )
        assert second - first and max(first) in second
        for _ in range(20):  # whichever process the kernel hands each one to
            assert httpx.get(url, timeout=10).status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=30)[0].decode()
    assert "(2 processes)" in output
    assert f"Server process {victim} exited (-9); starting another." in output
    with pytest.raises(httpx.HTTPError):
        httpx.get(url, timeout=1)


@pytest.mark.smoke
@pytest.mark.parametrize(
    ("processes", "error"),
    [
        ("2", "--processes above 1 needs PostgreSQL and Redis"),
        ("0", "--processes must be 1 or more."),
    ],
)
def test_processes_that_cannot_share_the_work_are_refused(tmp_path, processes, error):
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path}/site.sqlite3",
        "OLLAMA_BASE_URL": "http://127.0.0.1:9",
    }
    env.pop("REDIS_URL", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "runsite", "--processes", processes],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert error in done.stderr
