"""The simulator's Ollama side (`chat/simulator/ollama.py`), over real HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from chat.simulator import (
    RUNNER_STOPPED,
    SERVER_BUSY,
    SimulatorServer,
    reply_script,
    split_tokens,
)
from tests.simulator.asking import HELLO, PLAIN, THINKER, chat_lines
from tests.support.waiting import until_sync

METRICS = (
    "total_duration",
    "load_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "eval_count",
    "eval_duration",
)


def text_of(lines: list[dict[str, Any]], field: str) -> str:
    return "".join(line["message"].get(field, "") for line in lines)


# -- streaming chat --------------------------------------------------------------


def test_stream_sends_thinking_then_content_then_done(client: httpx.Client) -> None:
    lines = chat_lines(client)
    *chunks, done = lines
    assert len(chunks) == 8 + 30  # one token per chunk
    thinking, content = chunks[:8], chunks[8:]
    assert all(
        c["message"]["content"] == "" and c["message"]["thinking"] for c in thinking
    )
    assert all(
        c["message"]["content"] and "thinking" not in c["message"] for c in content
    )
    assert all(c["done"] is False and c["model"] == THINKER for c in chunks)
    assert all(c["message"]["role"] == "assistant" for c in lines)
    assert done["done"] is True
    assert done["done_reason"] == "stop"
    assert done["message"] == {"role": "assistant", "content": ""}
    assert done["eval_count"] == 38
    for key in METRICS:
        assert isinstance(done[key], int) and done[key] > 0, key
    assert done["created_at"].endswith("Z")


def test_stream_text_is_deterministic_markdown_with_utf8(client: httpx.Client) -> None:
    first = chat_lines(client, options={"num_predict": 1000})
    again = chat_lines(client)
    assert text_of(first, "content") == text_of(again, "content")
    assert text_of(first, "thinking") == text_of(again, "thinking")
    content = text_of(first, "content")
    assert "—" in content  # multi-byte UTF-8 arrives intact
    assert content.rstrip()[-1] in ".!?"


def test_long_answers_have_a_list_and_a_code_block(sim: SimulatorServer) -> None:
    sim.config.answer_tokens = 400
    script = reply_script(sim.config, HELLO, think=True)
    content = "".join(script.content)
    assert len(script.content) == 400
    assert "\n- " in content
    assert "```python\n" in content
    assert content.count("```") % 2 == 0


def test_tokens_arrive_one_per_write_spread_over_time(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    tps, count = 40.0, 12
    sim.config.tps, sim.config.think_tokens, sim.config.answer_tokens = tps, 0, count
    reads: list[tuple[float, bytes]] = []
    body = {"model": THINKER, "messages": HELLO}
    with client.stream("POST", "/api/chat", json=body) as response:
        reads += [(time.monotonic(), raw) for raw in response.iter_raw()]
    lines_per_read = [raw.count(b"\n") for _, raw in reads]
    assert sum(lines_per_read) == count + 1
    # Each token is its own write; the last one may share a read with "done".
    assert sum(n == 1 for n in lines_per_read) >= count * 0.7
    arrivals = [t for t, raw in reads]
    span = arrivals[-1] - arrivals[0]
    assert span >= 0.9 * (count - 1) / tps  # absolute deadlines: never early
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    assert sum(gap > 0.25 / tps for gap in gaps) >= len(gaps) / 2


def test_a_burst_writes_several_tokens_at_once(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.tps, sim.config.think_tokens, sim.config.answer_tokens = 40.0, 0, 12
    sim.config.burst = 3
    body = {"model": THINKER, "messages": HELLO}
    with client.stream("POST", "/api/chat", json=body) as response:
        reads = [raw.count(b"\n") for raw in response.iter_raw()]
    assert sum(reads) == 12 + 1
    # Three lines a write, a read each (the last may share a read with "done").
    assert reads.count(3) >= 3
    assert client.get("/_sim/log").json()["requests"][-1]["tokens_sent"] == 12


def test_record_times_logs_a_timestamp_per_token(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.record_times = True
    sim.config.tps = 200
    started = time.time()
    chat_lines(client)
    entry = client.get("/_sim/log").json()["requests"][-1]
    assert entry["tokens_sent"] == 38
    assert entry["finished"] is True and entry["disconnected"] is False
    times = entry["times"]
    assert len(times) == 38
    assert times == sorted(times)
    assert started <= times[0] <= times[-1] <= time.time()
    assert times[-1] - times[0] >= 0.9 * 37 / 200


def test_think_false_gives_no_thinking(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    lines = chat_lines(client, think=False)
    assert text_of(lines, "thinking") == ""
    assert len(lines) == 30 + 1
    assert lines[-1]["eval_count"] == 30
    assert sim.log[-1].thinking is False


def test_think_levels_are_accepted(client: httpx.Client) -> None:
    for level in ("low", "medium", "high", "max", True):
        assert text_of(chat_lines(client, think=level), "thinking")


def test_plain_model_never_thinks(client: httpx.Client) -> None:
    assert text_of(chat_lines(client, model=PLAIN), "thinking") == ""
    assert text_of(chat_lines(client, model=PLAIN, think=False), "thinking") == ""


def test_content_in_done_puts_the_last_token_on_the_done_chunk(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    plain = chat_lines(client)
    sim.config.content_in_done = True
    lines = chat_lines(client)
    assert len(lines) == len(plain) - 1
    assert lines[-1]["done"] is True
    assert lines[-1]["message"]["content"] == plain[-2]["message"]["content"]
    assert text_of(lines, "content") == text_of(plain, "content")
    assert lines[-1]["eval_count"] == 38


def test_answer_text_override_is_split_by_words(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.answer_text = "Hello, wörld — 🙂 done."
    sim.config.thinking_text = "Just greet."
    lines = chat_lines(client)
    assert [c["message"].get("thinking") for c in lines[:2]] == ["Just", " greet."]
    contents = [c["message"]["content"] for c in lines[2:-1]]
    assert contents == ["Hello,", " wörld", " —", " 🙂", " done."]
    assert split_tokens(" a  b\n") == [" a", "  b", "\n"]
    assert split_tokens("中文 text，好。") == ["中", "文", " text", "，", "好", "。"]


def test_num_predict_stops_with_length(client: httpx.Client) -> None:
    lines = chat_lines(client, options={"num_predict": 10})
    assert len(lines) == 11
    assert lines[-1]["done_reason"] == "length"
    assert lines[-1]["eval_count"] == 10


def test_non_streaming_returns_one_object(client: httpx.Client) -> None:
    streamed = chat_lines(client)
    response = client.post(
        "/api/chat", json={"model": THINKER, "messages": HELLO, "stream": False}
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    body = response.json()
    assert body["done"] is True and body["done_reason"] == "stop"
    assert body["message"]["content"] == text_of(streamed, "content")
    assert body["message"]["thinking"] == text_of(streamed, "thinking")
    assert body["eval_count"] == 38
    for key in METRICS:
        assert body[key] > 0, key


async def test_usable_from_another_event_loop(sim: SimulatorServer) -> None:
    async with httpx.AsyncClient(base_url=sim.url, timeout=10) as http:
        body = {"model": PLAIN, "messages": HELLO}
        async with http.stream("POST", "/api/chat", json=body) as response:
            lines = [json.loads(line) async for line in response.aiter_lines()]
    assert lines[-1]["done"] is True
    assert len(lines) == 31


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
