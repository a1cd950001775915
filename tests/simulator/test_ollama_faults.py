"""The simulator's Ollama side (`chat/simulator/ollama.py`), over real HTTP: the
requests it refuses, loading, and the faults it is told to make."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from chat.simulator import RUNNER_STOPPED, SERVER_BUSY, SimulatorServer
from tests.simulator.asking import HELLO, PLAIN, THINKER, chat_lines
from tests.support.waiting import until_sync

# -- errors ----------------------------------------------------------------------


def test_unknown_model_is_404(client: httpx.Client) -> None:
    response = client.post("/api/chat", json={"model": "ghost", "messages": HELLO})
    assert response.status_code == 404
    assert response.json() == {"error": 'model "ghost" not found, try pulling it first'}


def test_think_on_a_plain_model_is_400(client: httpx.Client) -> None:
    for think in (True, "high"):
        body = {"model": PLAIN, "messages": HELLO, "think": think}
        response = client.post("/api/chat", json=body)
        assert response.status_code == 400
        assert response.json() == {"error": '"llama-demo:3b" does not support thinking'}


def test_invalid_think_value_is_400(client: httpx.Client) -> None:
    body: dict[str, Any] = {"model": THINKER, "messages": HELLO, "think": "extreme"}
    response = client.post("/api/chat", json=body)
    assert response.status_code == 400
    assert response.json() == {
        "error": 'invalid think value: "extreme" '
        '(must be "high", "medium", "low", "max", true, or false)'
    }
    body["think"] = 3
    assert client.post("/api/chat", json=body).status_code == 400


def test_bad_bodies_are_400(client: httpx.Client) -> None:
    assert client.post("/api/chat", content=b"").json() == {
        "error": "missing request body"
    }
    assert client.post("/api/chat", content=b"{nope").status_code == 400
    missing = client.post("/api/chat", json={"messages": HELLO})
    assert missing.json() == {"error": "model is required"}


def test_load_only_request(sim: SimulatorServer, client: httpx.Client) -> None:
    response = client.post("/api/chat", json={"model": THINKER, "messages": []})
    assert response.status_code == 200
    body = json.loads(response.text)
    assert body["done"] is True and body["done_reason"] == "load"
    assert body["message"] == {"role": "assistant", "content": ""}
    assert [m["name"] for m in client.get("/api/ps").json()["models"]] == [THINKER]
    unload = {"model": THINKER, "messages": [], "keep_alive": 0}
    assert client.post("/api/chat", json=unload).json()["done_reason"] == "unload"
    assert client.get("/api/ps").json() == {"models": []}
    assert [e.done_reason for e in sim.log] == ["load", "unload"]
    assert all(e.load_only for e in sim.log)
    client.post("/api/chat", json={"model": THINKER, "messages": HELLO})
    assert sim.log[-1].load_only is False


def test_cold_load_waits_load_ms_once(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.load_ms = 200
    cold = chat_lines(client)[-1]["load_duration"]
    warm = chat_lines(client)[-1]["load_duration"]
    assert cold >= 0.9 * 200e6
    assert warm < cold / 2


def test_cut_after_closes_without_done(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.cut_after = 5
    received: list[dict[str, Any]] = []
    body = {"model": THINKER, "messages": HELLO}
    with (
        pytest.raises(httpx.RemoteProtocolError),
        client.stream("POST", "/api/chat", json=body) as response,
    ):
        for line in response.iter_lines():
            received.append(json.loads(line))
    assert len(received) == 5
    assert not any(line["done"] for line in received)
    entry = sim.log[-1]
    assert entry.fault == "cut" and entry.tokens_sent == 5
    assert entry.finished is False and entry.disconnected is False


def test_cut_after_beyond_the_end_still_drops_the_done_chunk(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.cut_after = 10_000
    body = {"model": THINKER, "messages": HELLO}
    lines: list[str] = []
    with (
        pytest.raises(httpx.RemoteProtocolError),
        client.stream("POST", "/api/chat", json=body) as response,
    ):
        for line in response.iter_lines():
            lines.append(line)
    assert len(lines) == 38


def test_error_after_writes_an_error_line(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.error_after = 3
    lines = chat_lines(client)
    assert len(lines) == 4
    assert lines[-1] == {"error": RUNNER_STOPPED}
    assert not any(line.get("done") for line in lines)
    non_streamed = client.post(
        "/api/chat", json={"model": THINKER, "messages": HELLO, "stream": False}
    )
    assert non_streamed.status_code == 500
    assert non_streamed.json() == {"error": RUNNER_STOPPED}


def test_status_override(sim: SimulatorServer, client: httpx.Client) -> None:
    sim.config.status = 503
    body = {"model": THINKER, "messages": HELLO}
    busy = client.post("/api/chat", json=body)
    assert busy.status_code == 503
    assert busy.json() == {"error": SERVER_BUSY}
    sim.config.status = 500
    assert client.post("/api/chat", json=body).json() == {"error": RUNNER_STOPPED}


def test_fault_requests_limits_faults_to_the_next_n(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.status, sim.config.fault_requests = 503, 1
    body = {"model": THINKER, "messages": HELLO}
    assert client.post("/api/chat", json=body).status_code == 503
    assert chat_lines(client)[-1]["done"] is True


def test_malformed_after_emits_one_bad_line(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.malformed_after = 2
    body = {"model": THINKER, "messages": HELLO}
    with client.stream("POST", "/api/chat", json=body) as response:
        raw = list(response.iter_lines())
    bad = [i for i, line in enumerate(raw) if not _parses(line)]
    assert bad == [2]
    assert json.loads(raw[-1])["done"] is True
    assert len(raw) == 38 + 2


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def test_client_disconnect_is_recorded(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.tps, sim.config.answer_tokens = 100, 500
    body = {"model": THINKER, "messages": HELLO}
    with client.stream("POST", "/api/chat", json=body) as response:
        for count, _ in enumerate(response.iter_lines(), start=1):
            if count == 3:
                break
    until_sync(lambda: sim.log[-1].disconnected, "the disconnect was never seen")
    entry = sim.log[-1]
    assert entry.finished is False
    assert 3 <= entry.tokens_sent < 100
    sent = entry.tokens_sent
    time.sleep(0.1)
    assert sim.log[-1].tokens_sent == sent  # generation really stopped
