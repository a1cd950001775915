"""The simulator's OpenAI-compatible side (`chat/simulator/openai.py`)."""

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
)
from chat.simulator.openai import decode_events
from tests.support.waiting import until_sync

THINKER = "qwen3-demo:8b"
PLAIN = "llama-demo:3b"
HELLO = [{"role": "user", "content": "Hello there"}]
PATH = "/v1/chat/completions"


def stream(client: httpx.Client, **body: Any) -> list[Any]:
    """The events of a streamed answer (`[DONE]` as the string)."""
    body = {"model": THINKER, "messages": HELLO, "stream": True, **body}
    with client.stream("POST", PATH, json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return decode_events(response.read())


def deltas(events: list[Any], field: str) -> str:
    return "".join(
        e["choices"][0]["delta"].get(field) or ""
        for e in events
        if isinstance(e, dict) and e.get("choices")
    )


def script(sim: SimulatorServer, think: bool = True) -> tuple[str, str]:
    s = reply_script(sim.config, HELLO, think=think)
    return "".join(s.thinking), "".join(s.content)


def test_models_lists_every_model(client: httpx.Client) -> None:
    body = client.get("/v1/models").json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == [THINKER, PLAIN]
    assert all(m["object"] == "model" for m in body["data"])


def test_stream_frames(sim: SimulatorServer, client: httpx.Client) -> None:
    events = stream(client)
    first, *tokens, finish, done = events
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(e["object"] == "chat.completion.chunk" for e in tokens)
    assert all(len(e["choices"][0]["delta"]) == 1 for e in tokens)  # one token each
    assert finish["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert "usage" not in finish and "timings" not in finish
    assert done == "[DONE]"
    thinking, content = script(sim)
    assert deltas(events, "reasoning_content") == thinking and thinking
    assert deltas(events, "content") == content and content
    # The client may read [DONE] before the server has closed the log entry.
    until_sync(lambda: sim.log[-1].ended is not None, "the log entry never closed")
    entry = sim.log[-1]
    assert entry.protocol == "openai" and entry.finished and entry.thinking
    assert entry.tokens_sent == len(tokens)


@pytest.mark.parametrize(
    ("style", "field", "opening"),
    [
        ("reasoning_content", "reasoning_content", None),
        ("reasoning", "reasoning", None),
        ("tags", "content", "<think>\n"),
        ("close_tag", "content", ""),
    ],
)
def test_reasoning_styles(
    sim: SimulatorServer, client: httpx.Client, style: str, field: str, opening: Any
) -> None:
    sim.config.reasoning = style
    events = stream(client)
    thinking, content = script(sim)
    if opening is None:
        assert deltas(events, field) == thinking
        assert deltas(events, "content") == content
    else:
        text = deltas(events, "content")
        assert text == f"{opening}{thinking}\n</think>\n\n{content}"
        pieces = [e["choices"][0]["delta"].get("content") for e in events[1:-2]]
        assert "\n</th" in pieces and "ink>\n\n" in pieces  # the tag comes split


def test_reasoning_style_per_request(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    events = stream(client, sim_reasoning="reasoning")
    assert deltas(events, "reasoning") == script(sim)[0]
    assert deltas(events, "reasoning_content") == ""


def test_unknown_reasoning_style_is_400(client: httpx.Client) -> None:
    body = {"model": THINKER, "messages": HELLO, "sim_reasoning": "smoke signals"}
    response = client.post(PATH, json=body)
    assert response.status_code == 400
    assert "sim_reasoning" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "thinks"),
    [
        ({}, True),
        ({"chat_template_kwargs": {"enable_thinking": False}}, False),
        ({"chat_template_kwargs": {"enable_thinking": True}}, True),
        ({"messages": [{"role": "user", "content": "Hello there /no_think"}]}, False),
        (
            {
                "messages": [{"role": "user", "content": "Hello there /no_think"}],
                "chat_template_kwargs": {"enable_thinking": False},
            },
            False,
        ),
        ({"messages": [{"role": "user", "content": "Hello /think"}]}, True),
        ({"model": PLAIN}, False),
    ],
)
def test_thinking_switches(
    sim: SimulatorServer, client: httpx.Client, body: dict[str, Any], thinks: bool
) -> None:
    events = stream(client, **body)
    assert bool(deltas(events, "reasoning_content")) is thinks
    assert deltas(events, "content")
    assert sim.log[-1].thinking is thinks


def test_soft_switch_off_with_inline_tags_gives_an_empty_block(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.reasoning = "tags"
    no_think = [{"role": "user", "content": "Hello there /no_think"}]
    text = deltas(stream(client, messages=no_think), "content")
    assert text.startswith("<think>\n\n</think>\n\n")
    off = {"enable_thinking": False}
    plain = deltas(stream(client, chat_template_kwargs=off), "content")
    assert "<think>" not in plain


def test_thinking_on_a_plain_model_is_400(client: httpx.Client) -> None:
    body = {
        "model": PLAIN,
        "messages": HELLO,
        "chat_template_kwargs": {"enable_thinking": True},
    }
    response = client.post(PATH, json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["message"] == '"llama-demo:3b" does not support thinking'
    assert error["type"] == "invalid_request_error"


def test_unknown_model_is_404(client: httpx.Client) -> None:
    response = client.post(PATH, json={"model": "nope:1b", "messages": HELLO})
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


@pytest.mark.parametrize(
    "body",
    [[], {"messages": HELLO}, {"model": THINKER}, {"model": THINKER, "messages": []}],
)
def test_bad_bodies_are_400(client: httpx.Client, body: Any) -> None:
    assert client.post(PATH, json=body).status_code == 400


def test_usage_when_asked(sim: SimulatorServer, client: httpx.Client) -> None:
    events = stream(client, stream_options={"include_usage": True})
    usage_chunk = events[-2]
    assert usage_chunk["choices"] == []
    usage = usage_chunk["usage"]
    assert usage["completion_tokens"] == sim.log[-1].tokens_sent == 38
    assert usage["total_tokens"] == usage["prompt_tokens"] + 38
    assert "usage" not in events[-3]


def test_timings_on_the_last_chunk(sim: SimulatorServer, client: httpx.Client) -> None:
    sim.config.timings = True
    events = stream(client, stream_options={"include_usage": True})
    assert "timings" not in events[-3] and "timings" in events[-2]
    timings = events[-2]["timings"]
    assert timings["predicted_n"] == 38 and timings["prompt_n"] > 0
    assert timings["prompt_ms"] >= 0 and timings["predicted_ms"] >= 0
    without_usage = stream(client)
    assert "timings" in without_usage[-2] and without_usage[-2]["choices"]


def test_max_tokens_stops_with_length(client: httpx.Client) -> None:
    events = stream(client, max_tokens=5)
    assert events[-2]["choices"][0]["finish_reason"] == "length"
    assert len(events) == 1 + 5 + 2


def test_sse_pings(sim: SimulatorServer, client: httpx.Client) -> None:
    sim.config.sse_ping = True
    body = {"model": PLAIN, "messages": HELLO, "stream": True}
    with client.stream("POST", PATH, json=body) as response:
        raw = response.read()
    assert raw.startswith(b": ping\n\n")
    assert raw.count(b": ping\n\n") == 1 + 30
    assert deltas(decode_events(raw), "content") == script(sim, think=False)[1]


def test_record_times_logs_a_timestamp_per_token(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.record_times = True
    started = time.time()
    stream(client)
    times = sim.log[-1].times
    assert len(times) == 38
    assert started <= times[0] <= times[-1] <= time.time() and times == sorted(times)


def test_not_streamed(sim: SimulatorServer, client: httpx.Client) -> None:
    sim.config.timings = True
    body = client.post(PATH, json={"model": THINKER, "messages": HELLO}).json()
    choice = body["choices"][0]
    thinking, content = script(sim)
    assert body["object"] == "chat.completion"
    assert choice["message"] == {
        "role": "assistant",
        "content": content,
        "reasoning_content": thinking,
    }
    assert choice["finish_reason"] == "stop"
    assert body["usage"]["completion_tokens"] == 38
    assert body["timings"]["predicted_n"] == 38


# -- faults ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [(503, SERVER_BUSY, "unavailable_error"), (500, RUNNER_STOPPED, "api_error")],
)
def test_status_override(
    sim: SimulatorServer, client: httpx.Client, status: int, message: str, kind: str
) -> None:
    sim.config.status = status
    response = client.post(PATH, json={"model": THINKER, "messages": HELLO})
    assert response.status_code == status
    error = response.json()["error"]
    assert (error["message"], error["type"], error["code"]) == (message, kind, status)
    assert sim.log[-1].fault == "status"


def test_fault_requests_limits_the_status_to_the_next_n(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.status, sim.config.fault_requests = 429, 1
    body = {"model": THINKER, "messages": HELLO}
    assert client.post(PATH, json=body).status_code == 429
    assert client.post(PATH, json=body).status_code == 200


def test_cut_after_closes_without_finish(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.cut_after = 5
    body = {"model": THINKER, "messages": HELLO, "stream": True}
    with (
        pytest.raises(httpx.RemoteProtocolError),
        client.stream("POST", PATH, json=body) as response,
    ):
        response.read()
    entry = sim.log[-1]
    assert (entry.fault, entry.tokens_sent, entry.finished) == ("cut", 5, False)


def test_error_after_writes_an_error_event_then_done(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.error_after = 4
    events = stream(client)
    assert len(events) == 1 + 4 + 2
    assert events[-2] == {
        "error": {
            "message": RUNNER_STOPPED,
            "type": "api_error",
            "param": None,
            "code": 500,
        }
    }
    assert events[-1] == "[DONE]"
    assert sim.log[-1].fault == "error"


def test_malformed_after_writes_one_bad_event_then_goes_on(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.malformed_after = 3
    body = {"model": THINKER, "messages": HELLO, "stream": True}
    with client.stream("POST", PATH, json=body) as response:
        raw = response.read().decode()
    blocks = [b for b in raw.split("\n\n") if b]
    bad = [b for b in blocks if b != "data: [DONE]" and not _is_json(b[6:])]
    assert len(bad) == 1
    assert blocks[-1] == "data: [DONE]"
    until_sync(lambda: sim.log[-1].ended is not None, "the log entry never closed")
    assert sim.log[-1].fault == "malformed" and sim.log[-1].finished


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_slow_first_token(sim: SimulatorServer, client: httpx.Client) -> None:
    sim.config.ttft_ms = 200
    started = time.monotonic()
    stream(client, model=PLAIN)
    assert time.monotonic() - started >= 0.2


def test_client_disconnect_is_recorded(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.tps, sim.config.answer_tokens = 100, 500
    body = {"model": PLAIN, "messages": HELLO, "stream": True}
    with client.stream("POST", PATH, json=body) as response:
        for count, _ in enumerate(response.iter_lines(), start=1):
            if count == 6:
                break
    until_sync(lambda: sim.log[-1].disconnected, "the disconnect was never seen")
    entry = sim.log[-1]
    assert entry.disconnected and not entry.finished
    assert entry.tokens_sent < 100


def test_management_command_picks_the_reasoning_style() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "chatsite.settings"}
    command = [sys.executable, "manage.py", "simulate_ollama", "--port", "0"]
    command += ["--tps", "0", "--ttft-ms", "0", "--answer-tokens", "3"]
    command += ["--reasoning", "reasoning", "--timings", "--tool-format", "tags"]
    process = subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[-1]
        body = {"model": THINKER, "messages": HELLO}
        reply = httpx.post(url + PATH, json=body, timeout=10).json()
        assert reply["choices"][0]["message"]["reasoning"]
        assert reply["timings"]["predicted_n"] > 3
        tool = {"type": "function", "function": {"name": "echo"}}
        ask = [{"role": "user", "content": "use echo"}]
        body = {"model": THINKER, "messages": ask, "tools": [tool]}
        reply = httpx.post(url + PATH, json=body, timeout=10).json()
        assert reply["choices"][0]["message"]["content"].startswith("<tool_call>")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


def test_cold_model_loads_once_and_shows_in_ps(
    sim: SimulatorServer, client: httpx.Client
) -> None:
    sim.config.load_ms = 300
    body = {"model": PLAIN, "messages": HELLO}
    started = time.monotonic()
    client.post(PATH, json=body).raise_for_status()
    assert time.monotonic() - started >= 0.3
    ready_at = sim.state.loaded[PLAIN].ready_at
    client.post(PATH, json=body).raise_for_status()
    assert sim.state.loaded[PLAIN].ready_at == ready_at  # no second load
    [loaded] = client.get("/api/ps").json()["models"]
    assert (loaded["name"], loaded["context_length"]) == (PLAIN, 4096)
