"""The simulator's Ollama side (`chat/simulator/ollama.py`) streaming a chat, over
real HTTP."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from chat.simulator import SimulatorServer, reply_script, split_tokens
from tests.simulator.asking import HELLO, PLAIN, THINKER, chat_lines

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
    # Paced on a schedule from the stream's start: no token before its time.
    # (A late first token is followed by the others catching up, so the
    # first-to-last span may be shorter on a busy machine.)
    assert times[-1] - started >= 0.9 * 37 / 200


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
