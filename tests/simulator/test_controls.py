"""The simulator's controls: its /_sim endpoints (config, log, reset) and the
`simulate_ollama` management command, over real HTTP."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from chat.simulator import SimulatorServer
from tests.simulator.asking import HELLO, PLAIN, THINKER, chat_lines

# -- the /_sim endpoints ---------------------------------------------------------


def test_config_endpoint_updates_fields(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    response = client.post("/_sim/config", json={"tps": 5, "answer_text": "Hi."})
    assert response.status_code == 200
    assert response.json()["tps"] == 5.0
    assert sim.config.tps == 5.0 and sim.config.answer_text == "Hi."
    assert client.get("/_sim/config").json()["answer_text"] == "Hi."
    tiny = {"name": "tiny:1b", "family": "llama", "parameter_size": "1B"}
    models = [{**tiny, "context_length": 2048}]
    assert client.post("/_sim/config", json={"models": models}).status_code == 200
    assert [m["name"] for m in client.get("/api/tags").json()["models"]] == ["tiny:1b"]


def test_config_endpoint_rejects_unknown_fields_and_bad_values(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    unknown = client.post("/_sim/config", json={"tps": 1, "warp_speed": 9})
    assert unknown.status_code == 400
    assert "warp_speed" in unknown.json()["error"]
    assert sim.config.tps == 0  # all or nothing
    assert client.post("/_sim/config", json={"tps": "fast"}).status_code == 400
    assert client.post("/_sim/config", json={"cut_after": True}).status_code == 400
    assert client.post("/_sim/config", json=[1]).status_code == 400


def test_log_and_reset_endpoints(sim: SimulatorServer, client: httpx.Client) -> None:
    client.post("/_sim/config", json={"seed": 7})
    chat_lines(client)
    (entry,) = client.get("/_sim/log").json()["requests"]
    assert entry["body"]["model"] == THINKER
    assert entry["model"] == THINKER and entry["status"] == 200
    assert entry["finished"] is True and entry["done_reason"] == "stop"
    assert client.post("/_sim/reset").json() == {"ok": True}
    assert client.get("/_sim/log").json() == {"requests": []}
    assert client.get("/api/ps").json() == {"models": []}
    assert sim.config.seed == 0


def test_log_is_bounded(sim: SimulatorServer, client: httpx.Client) -> None:
    sim.config.log_size = 3
    for _ in range(5):
        client.post("/api/chat", json={"model": "ghost", "messages": HELLO})
    assert len(sim.log) == 3


# -- the management command -----------------------------------------------------


def test_management_command_serves_and_stops() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "chatsite.settings"}
    command = [sys.executable, "manage.py", "simulate_ollama", "--port", "0"]
    command += ["--tps", "0", "--ttft-ms", "0", "--answer-tokens", "3"]
    process = subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = line.split()[-1]
        assert url.startswith("http://127.0.0.1:")
        body = {"model": PLAIN, "messages": HELLO, "stream": False}
        reply = httpx.post(f"{url}/api/chat", json=body, timeout=10).json()
        assert reply["eval_count"] == 3
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
