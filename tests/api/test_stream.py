"""Streaming over the API as the wire carries it: `curl -N` gets each token
while the model is still writing (nothing between buffers it), a client that
goes away stops the model's generation, a client that reads slowly holds
nothing back, and an answer waiting for its turn opens its stream at once and
runs after the one before it.

Every wait here is for the work (the simulator's log, the stored answer), never
for time: the simulator is slowed only so that the answers last far longer than
what the tests read of them."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from chat.models import Message, SiteDefaults, Ticket
from chat.simulator.script import reply_script
from tests.api.conftest import ASK, CLIENT_TIMEOUT, MODEL, api_answers, stored_answer
from tests.support.waiting import DEADLINE, until_sync

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"model": MODEL, "messages": ASK, "stream": True, "reasoning_effort": "none"}


def long_answers(simulator: Any, tps: float = 20, tokens: int = 400) -> None:
    """Answers that last `tokens / tps` seconds (20 s by default): far longer
    than any test reads of them."""
    simulator.config.tps = tps
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = tokens


def script_text(simulator: Any) -> str:
    return "".join(reply_script(simulator.config, ASK, think=False).content)


def running_entry(simulator: Any) -> Any:
    return until_sync(
        lambda: (
            simulator.log and simulator.log[-1].tokens_sent > 0 and simulator.log[-1]
        ),
        "the model server never started answering",
    )


def sse_data(line: str) -> Any:
    """The JSON of a `data:` line (or "[DONE]"); None for other lines."""
    if not line.startswith("data: "):
        return None
    data = line[len("data: ") :]
    return data if data == "[DONE]" else json.loads(data)


def delta_of(event: Any) -> dict[str, Any]:
    if not isinstance(event, dict) or not event.get("choices"):
        return {}
    return event["choices"][0]["delta"]


class Lines:
    """A subprocess's stdout, a line at a time as it is written: a thread reads
    it, the test takes lines with a deadline (a hung server fails the test)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in iter(self.process.stdout.readline, b""):
            self._lines.put(raw.decode().rstrip("\r\n"))
        self._lines.put(None)

    def next(self) -> str | None:
        """The next line (None at the end of the output)."""
        try:
            return self._lines.get(timeout=DEADLINE)
        except queue.Empty:
            raise AssertionError(f"no line from curl in {DEADLINE} s") from None

    def rest(self) -> list[str]:
        lines = []
        while (line := self.next()) is not None:
            lines.append(line)
        return lines


@contextmanager
def curl(url: str, key: str, body: dict[str, Any]) -> Iterator[Lines]:
    """`curl -N` POSTing `body`, its output read as it comes."""
    process = subprocess.Popen(
        [
            "curl",
            "-N",
            "--silent",
            "--show-error",
            "--max-time",
            str(int(CLIENT_TIMEOUT)),
            "-H",
            f"Authorization: Bearer {key}",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            json.dumps(body),
            url,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        yield Lines(process)
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(CLIENT_TIMEOUT)
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()
        process.stderr.close()


# ---- nothing buffers ---------------------------------------------------------


def test_curl_gets_the_tokens_while_the_model_is_still_writing(
    live_server_url, alice_key, simulator
):
    long_answers(simulator)
    total = simulator.config.answer_tokens
    text = script_text(simulator)
    received = ""
    seen: list[tuple[int, bool]] = []  # (tokens the model sent, its request over)

    with curl(f"{live_server_url}/v1/chat/completions", alice_key.key, BODY) as out:
        while len(seen) < 3:
            line = out.next()
            assert line is not None, "the stream ended early"
            content = delta_of(sse_data(line)).get("content")
            if content:
                received += content
                entry = simulator.log[-1]
                seen.append((entry.tokens_sent, entry.ended is not None))
    # curl is gone: the model server's request is closed, the answer stopped.

    assert text.startswith(received)
    # Each piece came while the model had sent only part of its answer.
    assert all(not ended and sent < total for sent, ended in seen), seen
    answer = stored_answer(Message.Status.STOPPED)
    assert answer.content.startswith(received)
    entry = until_sync(lambda: simulator.log[-1].ended and simulator.log[-1], "ended")
    assert entry.disconnected and not entry.finished
    assert entry.tokens_sent < total


def test_curl_gets_the_whole_answer_and_the_end_of_the_stream(
    live_server_url, alice_key, simulator
):
    with curl(f"{live_server_url}/v1/chat/completions", alice_key.key, BODY) as out:
        events = [sse_data(line) for line in out.rest()]
    events = [event for event in events if event is not None]

    assert events[-1] == "[DONE]"
    *chunks, last, _ = events
    assert last["choices"][0]["finish_reason"] == "stop"
    content = "".join(delta_of(chunk).get("content") or "" for chunk in chunks)
    assert content == script_text(simulator) == stored_answer("done").content


# ---- the client goes away --------------------------------------------------------


@pytest.mark.parametrize("dialect", ["openai", "ollama"])
def test_a_client_closing_the_stream_stops_the_model(
    http, alice_key, simulator, dialect
):
    long_answers(simulator)
    if dialect == "openai":
        path, body = "/v1/chat/completions", BODY
    else:
        path = "/api/chat"
        body = {"model": MODEL, "messages": ASK, "think": False}
    received = ""
    pieces = 0
    with http.stream("POST", path, headers=alice_key.headers, json=body) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if dialect == "openai":
                content = delta_of(sse_data(line)).get("content")
            else:
                content = json.loads(line)["message"]["content"] if line else None
            if content:
                received += content
                pieces += 1
            if pieces == 3:
                break
    # Leaving the block closed the connection halfway through the answer.

    answer = stored_answer(Message.Status.STOPPED)
    assert answer.content.startswith(received)
    entry = until_sync(lambda: simulator.log[-1].ended and simulator.log[-1], "ended")
    assert entry.disconnected and not entry.finished
    assert entry.tokens_sent < simulator.config.answer_tokens


def test_a_client_going_away_before_a_whole_answer_stops_the_model(
    live_server_url, alice_key, simulator
):
    long_answers(simulator)
    body = json.dumps({**BODY, "stream": False}).encode()
    address = urlparse(live_server_url)
    with socket.create_connection((address.hostname, address.port)) as client:
        client.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\n"
            b"Host: 127.0.0.1\r\n"
            b"Authorization: Bearer " + alice_key.key.encode() + b"\r\n"
            b"Content-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        running_entry(simulator)
    # Closed while the model was writing the answer the client waited for.

    stored_answer(Message.Status.STOPPED)
    entry = until_sync(lambda: simulator.log[-1].ended and simulator.log[-1], "ended")
    assert entry.disconnected and not entry.finished


# ---- the client reads slowly -------------------------------------------------------


def test_a_slow_reader_holds_nothing_back(live_server_url, alice_key, simulator):
    """The client takes its first piece, then reads nothing (its socket's
    buffer kept small, so the server cannot pass it the rest either) until the
    model has finished and the answer is stored; then it gets all of it."""
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 3000  # tens of KB of events
    transport = httpx.HTTPTransport(
        socket_options=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)]
    )
    with (
        httpx.Client(
            base_url=live_server_url, transport=transport, timeout=CLIENT_TIMEOUT
        ) as client,
        client.stream(
            "POST", "/v1/chat/completions", headers=alice_key.headers, json=BODY
        ) as response,
    ):
        lines = response.iter_lines()
        first = next(line for line in lines if sse_data(line) is not None)
        # Not read on: the model goes on, ends, and its answer is stored.
        answer = stored_answer(Message.Status.DONE)
        entry = simulator.log[-1]
        assert entry.finished and not entry.disconnected
        rest = list(lines)

    events = [sse_data(line) for line in [first, *rest]]
    events = [event for event in events if event is not None]
    assert events[-1] == "[DONE]"
    assert events[-2]["choices"][0]["finish_reason"] == "stop"
    content = "".join(delta_of(event).get("content") or "" for event in events)
    assert content == answer.content == script_text(simulator)


# ---- waiting for a turn --------------------------------------------------------


def one_at_a_time() -> None:
    site = SiteDefaults.load()
    site.generations_per_user = 1
    site.save()


def queued_answer() -> Message:
    """The second API answer, once it waits in line (its ticket not served)."""

    def waiting() -> Message | None:
        answers = api_answers()
        if len(answers) < 2:
            return None
        ticket = Ticket.objects.filter(message=answers[1]).first()
        return answers[1] if ticket is not None and ticket.served is None else None

    return until_sync(waiting, "the second answer never waited in line")


def test_a_queued_stream_opens_at_once_and_runs_after_the_first(
    live_server_url, alice_key, simulator
):
    one_at_a_time()
    long_answers(simulator)
    headers = alice_key.headers
    url = "/v1/chat/completions"
    with (
        httpx.Client(base_url=live_server_url, timeout=CLIENT_TIMEOUT) as one,
        httpx.Client(base_url=live_server_url, timeout=CLIENT_TIMEOUT) as other,
        one.stream("POST", url, headers=headers, json=BODY) as first,
    ):
        # Kept: a line iterator dropped half-read closes its response.
        first_lines = first.iter_lines()
        next(line for line in first_lines if delta_of(sse_data(line)).get("content"))
        running = simulator.log[-1]

        with other.stream("POST", url, headers=headers, json=BODY) as second:
            # The response opened while the answer waits for its turn: the
            # role first, no text, and the model not asked yet.
            assert second.status_code == 200
            assert second.headers["content-type"].startswith("text/event-stream")
            second_lines = second.iter_lines()
            opening = next(e for line in second_lines if (e := sse_data(line)))
            assert delta_of(opening) == {"role": "assistant", "content": ""}
            waiting = queued_answer()
            assert len(simulator.log) == 1

            # The first one stops (its client goes away): the second runs.
            simulator.config.tps = 0.0
            first.close()
            rest = [sse_data(line) for line in second_lines]

    events = [event for event in rest if event is not None]
    assert events[-1] == "[DONE]"
    content = "".join(delta_of(event).get("content") or "" for event in events)
    done = until_sync(
        lambda: Message.objects.filter(pk=waiting.pk, status="done").first(),
        "the queued answer never finished",
    )
    assert content == done.content == script_text(simulator)
    assert Message.objects.get(pk=api_answers()[0].pk).status == "stopped"
    second_entry = simulator.log[-1]
    assert second_entry is not running and second_entry.finished
    assert second_entry.started >= running.ended
    assert done.queue_wait_ms is not None and done.queue_wait_ms > 0


def test_a_queued_ollama_answer_waits_silently_then_completes(
    live_server_url, alice_key, http, simulator
):
    """Ollama sends nothing before the first token: the client just waits."""
    one_at_a_time()
    long_answers(simulator)
    body = {"model": MODEL, "messages": ASK, "think": False}
    with http.stream(
        "POST", "/api/chat", headers=alice_key.headers, json=body
    ) as first:
        # Kept: a line iterator dropped half-read closes its response.
        first_lines = first.iter_lines()
        assert next(first_lines)

        def second() -> dict[str, Any]:
            with httpx.Client(base_url=live_server_url, timeout=CLIENT_TIMEOUT) as c:
                response = c.post(
                    "/api/chat",
                    headers=alice_key.headers,
                    json={**body, "stream": False},
                )
                return {"status": response.status_code, **response.json()}

        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(second)
            queued_answer()
            assert not answer.done() and len(simulator.log) == 1
            simulator.config.tps = 0.0
            first.close()
            result = answer.result(timeout=DEADLINE)

    assert result["status"] == 200 and result["done"] is True
    assert result["message"]["content"] == script_text(simulator)
    assert stored_answer_of(1).status == "done"


def stored_answer_of(index: int) -> Message:
    return until_sync(
        lambda: (
            (answers := api_answers())
            and len(answers) > index
            and answers[index].status != "streaming"
            and answers[index]
        ),
        f"API answer {index} never ended",
    )
