"""Relay latency: what chatsite adds between the model server and the socket.

The simulator stamps each token's send time (wall clock, right after the write).
Clients record when each token's text arrives, once through chatsite's WebSocket
and once reading the simulator directly (the baseline). Both run in the same
process, in the same run, so "added" is a difference measured under equal load.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import math
import os
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import websockets
from websockets.exceptions import InvalidHandshake

from bench import api
from bench.common import (
    SHELL_SIGN_IN,
    StreamResult,
    answer_text,
    assign_arrivals,
    deployed,
    free_port,
    manage,
    percentile,
    spawn,
    spawn_simulator,
    terminate,
    token_ends,
    wait_until_up,
)


@dataclass
class Scenario:
    name: str
    streams: int
    tps: float
    tokens: int
    viewers: int = 0  # signed-out sockets of one live shared link per stream
    # How the answers are read: "ws" (the conversation's WebSocket), over the
    # API, "sse" (/v1/chat/completions) or "ndjson" (/api/chat), or "floor":
    # the bare relay of bench/floor.py instead of chatsite, the reference for
    # the server's CPU per token (its row's cpu/1k is the bare relay's).
    via: str = "ws"
    nginx: bool = False  # the socket through nginx running deploy/nginx.conf


# The ASGI servers Channels runs under, as `python -m bench --server NAME` starts
# them: one process (one worker) on the site's port. Daphne is the default;
# uvicorn and granian are measured against it (not in requirements: install
# them to compare, `pip install uvicorn httptools granian`).
SERVERS: dict[str, list[str]] = {
    "daphne": ["-m", "chatsite.serve", "-b", "127.0.0.1", "-p", "{port}"],
    "uvicorn": ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}"]
    + ["--ws", "websockets", "--http", "httptools", "--lifespan", "off"]
    + ["--no-access-log", "--log-level", "warning", "chatsite.asgi:application"],
    "granian": ["-m", "granian", "--interface", "asginl", "--host", "127.0.0.1"]
    + ["--port", "{port}", "--workers", "1", "--http", "1", "--loop", "asyncio"]
    + ["--log-level", "warning", "--no-access-log", "chatsite.asgi:application"],
}


class Site:
    """A simulator and one server process (Daphne unless `server` names another
    of SERVERS) on a throwaway SQLite database."""

    def __init__(self, backend: str = "ollama", server: str = "daphne") -> None:
        self.backend = backend  # the protocol chatsite and the baseline speak
        self.server = server
        self.tmp = tempfile.TemporaryDirectory(prefix="chatsite-bench-")
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{self.tmp.name}/bench.sqlite3",
            **deployed(),
            "DJANGO_SETTINGS_MODULE": "chatsite.settings",
            # 100 API streams at once, and again, from one key: no rate limit.
            "API_REQUESTS_PER_MINUTE": "0",
        }
        self.env.pop("REDIS_URL", None)
        self.sim_port, self.web_port = free_port(), free_port()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.nginx: Any = None  # tests.support.nginx.Nginx, once `start_nginx` ran
        self.floor: subprocess.Popen[bytes] | None = None  # once `start_floor` ran
        self.floor_port = 0

    @property
    def sim_url(self) -> str:
        return f"http://127.0.0.1:{self.sim_port}"

    @property
    def profile_url(self) -> str:
        return self.sim_url + ("/v1" if self.backend == "openai" else "")

    def start(self) -> None:
        manage(self.env, "migrate", "--noinput", "-v", "0")
        self.processes.append(
            spawn_simulator(self.env, self.sim_port, "--record-times")
        )
        self.processes.append(
            spawn(
                self.env,
                *(arg.format(port=self.web_port) for arg in SERVERS[self.server]),
            )
        )
        wait_until_up(f"{self.sim_url}/api/version")
        # /healthz: with DEBUG off, pages need collectstatic's manifest.
        wait_until_up(f"http://127.0.0.1:{self.web_port}/healthz")
        self.cookie, self.api_key = self._setup_data()

    def start_nginx(self) -> int:
        """Debian's nginx with the shipped deploy/nginx.conf in front of the
        Daphne process (tests/support/nginx.py); its port."""
        from tests.support.nginx import Nginx, render

        directory = Path(self.tmp.name) / "nginx"
        directory.mkdir()
        port = free_port()
        self.nginx = Nginx(directory, port, render(directory, port, [self.web_port]))
        self.nginx.start()
        return port

    def start_floor(self) -> None:
        """The bare relay (bench/floor.py) on the same simulator."""
        self.floor_port = free_port()
        self.floor = spawn(
            self.env,
            *("-m", "bench.floor", "--port", str(self.floor_port)),
            *("--upstream", self.sim_url, "--model", "llama-demo:3b"),
        )
        self.processes.append(self.floor)
        wait_until_up(f"http://127.0.0.1:{self.floor_port}/")

    @property
    def daphne_pid(self) -> int:
        return self.processes[1].pid

    @property
    def server_pids(self) -> list[int]:
        """The processes serving the site: the server's, and its children's
        (granian serves from a worker process)."""
        return [self.daphne_pid, *descendants(self.daphne_pid)]

    @property
    def sim_pid(self) -> int:
        return self.processes[0].pid

    def stop(self) -> None:
        if self.nginx is not None:
            self.nginx.stop()
        # The server's children too (granian's worker, a process pool's
        # workers): killed if still running once the server is gone.
        children = {pid: cmdline(pid) for pid in descendants(self.daphne_pid)}
        terminate(self.processes, wait=10)
        for pid, command in children.items():
            if command and cmdline(pid) == command:  # the same process, not a reuse
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.tmp.cleanup()

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def _setup_data(self) -> tuple[str, str]:
        """The session cookie of the user who asks every question, and an API
        key of theirs."""
        script = (
            "from django.contrib.auth.models import User;"
            + SHELL_SIGN_IN
            + "from chat.models import ApiKey, ModelProfile, SiteDefaults;"
            "u = User.objects.create_user('bench', password='x');"
            # One user streams every answer: no per-user limit.
            "SiteDefaults(generations_per_user=0).save();"
            "ModelProfile.objects.create(tag='llama-demo:3b', "
            f"backend='{self.backend}', base_url='{self.profile_url}');"
            "print(signed_in(u), ApiKey.issue(u, 'bench')[1])"
        )
        session, key = manage(self.env, "shell", "-v", "0", "-c", script).split()
        return "sessionid=" + session, key

    def sign_in(self, names: list[str]) -> list[str]:
        """New users of these names, each signed in: their session cookies."""
        script = (
            "from django.contrib.auth.models import User;"
            + SHELL_SIGN_IN
            + "print(' '.join(signed_in(User.objects.create_user(n, password='x')) "
            f"for n in {names!r}))"
        )
        keys = manage(self.env, "shell", "-v", "0", "-c", script).split()
        return ["sessionid=" + key for key in keys]

    def new_conversations(self, count: int) -> list[int]:
        script = (
            "from django.contrib.auth.models import User;"
            "from chat.models import Conversation, ModelProfile;"
            "u = User.objects.get(username='bench'); p = ModelProfile.objects.get();"
            "new = lambda: Conversation.objects.create(owner=u, model_profile=p);"
            f"print(' '.join(str(new().pk) for _ in range({count})))"
        )
        return [
            int(pk) for pk in manage(self.env, "shell", "-v", "0", "-c", script).split()
        ]

    def live_links(self, conversations: list[int]) -> list[str]:
        """A live shared link's token for each conversation."""
        script = (
            "from chat.models import Conversation, ShareLink;"
            "print(' '.join(ShareLink.create_for(c, mode='live')[1] for c in "
            f"Conversation.objects.filter(pk__in={conversations!r}).order_by('pk')))"
        )
        return manage(self.env, "shell", "-v", "0", "-c", script).split()

    def configure(self, **changes: Any) -> None:
        httpx.post(f"{self.sim_url}/_sim/config", json=changes).raise_for_status()
        httpx.post(f"{self.sim_url}/_sim/reset").raise_for_status()
        httpx.post(f"{self.sim_url}/_sim/config", json=changes).raise_for_status()

    def sim_log(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.sim_url}/_sim/log").json()["requests"])


async def through_chatsite(
    site: Site, conversation_id: int, ends: list[int], port: int | None = None
) -> StreamResult:
    """The answer over the conversation's socket, on Daphne's port or `port`
    (nginx's)."""
    result = StreamResult(key=f"bench conversation {conversation_id}")
    port = port or site.web_port
    url = f"ws://127.0.0.1:{port}/ws/conversations/{conversation_id}/"
    headers = {"Cookie": site.cookie, "Origin": f"http://127.0.0.1:{port}"}
    try:
        socket = await websockets.connect(
            url, additional_headers=headers, max_size=None
        )
    except (InvalidHandshake, OSError):
        result.refused = True
        return result
    async with socket as ws:
        result.started = time.time()
        await ws.send(
            json.dumps({"type": "send", "content": result.key, "client_id": "b"})
        )
        end = await read_answer(ws, result, ends)
    result.queue_wait_ms = (end.get("stats") or {}).get("queue_wait_ms")
    return result


async def read_answer(ws: Any, result: StreamResult, ends: list[int]) -> dict[str, Any]:
    """The answer's content frames, into `result`, up to its last frame ("done"
    or "error"), which is returned. Cancelled, what arrived is in `result`."""
    chunks: list[tuple[float, int]] = []
    received = 0
    end: dict[str, Any] = {}
    try:
        async for raw in ws:
            now = time.time()
            frame = json.loads(raw)
            if frame["type"] == "content":
                received += len(frame["delta"])
                chunks.append((now, received))
                result.frames += 1
                if result.first_token is None:
                    result.first_token = now
            elif frame["type"] in ("done", "error"):
                end = frame
                break
    finally:
        result.arrivals = assign_arrivals(ends, chunks)
    return end


async def through_floor(site: Site, number: int, ends: list[int]) -> StreamResult:
    """The same answer through the bare relay (bench/floor.py)."""
    result = StreamResult(key=f"bench floor {number}")
    url = f"ws://127.0.0.1:{site.floor_port}/ws"
    async with websockets.connect(url, max_size=None) as ws:
        result.started = time.time()
        await ws.send(json.dumps({"text": result.key}))
        await read_answer(ws, result, ends)
    return result


async def watch_link(site: Site, token: str, opened: asyncio.Event) -> int:
    """A link viewer: its content frames until the answer is done."""
    url = f"ws://127.0.0.1:{site.web_port}/ws/share/{token}/"
    headers = {"Origin": f"http://127.0.0.1:{site.web_port}"}
    frames = 0
    async with websockets.connect(url, additional_headers=headers, max_size=None) as ws:
        opened.set()
        async for raw in ws:
            kind = json.loads(raw)["type"]
            if kind == "content":
                frames += 1
            elif kind in ("done", "error"):
                break
    return frames


async def with_viewers(
    site: Site,
    conversation_id: int,
    token: str | None,
    count: int,
    ends: list[int],
    port: int | None = None,
) -> StreamResult:
    """The owner's stream, with `count` viewers of a live link watching it (a
    share socket subscribes before its handshake ends: once open, it hears all)."""
    viewers: list[asyncio.Task[int]] = []
    for _ in range(count if token else 0):
        opened = asyncio.Event()
        viewers.append(asyncio.create_task(watch_link(site, token or "", opened)))
        await opened.wait()
    result = await through_chatsite(site, conversation_id, ends, port)
    result.viewer_frames = sum(await asyncio.gather(*viewers))
    return result


async def direct(
    site: Site, ends: list[int], session: aiohttp.ClientSession, number: int
) -> StreamResult:
    result = StreamResult(key=f"bench direct {number}")
    chunks: list[tuple[float, int]] = []
    question = {"role": "user", "content": result.key}
    body: dict[str, Any] = {"model": "llama-demo:3b", "messages": [question]}
    url, text_of = f"{site.sim_url}/api/chat", _ollama_text
    if site.backend == "openai":
        body["stream"] = True
        url, text_of = f"{site.sim_url}/v1/chat/completions", _openai_text
    received = 0
    buffer = b""
    result.started = time.time()
    async with session.post(url, json=body) as response:
        async for data in response.content.iter_any():
            now = time.time()
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                text = text_of(line)
                if text:
                    received += len(text)
                    chunks.append((now, received))
                    result.frames += 1
                    if result.first_token is None:
                        result.first_token = now
    result.arrivals = assign_arrivals(ends, chunks)
    return result


def _ollama_text(line: bytes) -> str:
    return str(json.loads(line)["message"]["content"])


def _openai_text(line: bytes) -> str:
    if not line.startswith(b"data: {"):
        return ""  # [DONE], or a comment
    choices = json.loads(line[6:]).get("choices") or [{}]
    return str(choices[0].get("delta", {}).get("content") or "")


def reader_session() -> aiohttp.ClientSession:
    """The HTTP client of the baseline and of the API streams. It must cost
    little: with 100 streams, httpx's CPU per read and a new client (SSL context)
    per stream delayed the baseline more than chatsite."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),
        timeout=aiohttp.ClientTimeout(total=60),
    )


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """The process's children, theirs, and so on (Linux's /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found += [int(child), *descendants(int(child))]
    return found


def cmdline(pid: int) -> bytes:
    """The process's command line; b"" once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """The process's resident memory (VmHWM: its peak) from Linux's /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def latencies(results: list[StreamResult], log: list[dict[str, Any]]) -> list[float]:
    """Per token: arrival minus the simulator's send stamp, in ms. Each stream's log
    entry is the one whose last message is the stream's question (not the order of
    start: chatsite may send 100 simultaneous questions on in another order)."""
    entries = {entry["body"]["messages"][-1]["content"]: entry for entry in log}
    out: list[float] = []
    for result in results:
        entry = entries.get(result.key)
        if entry is None:
            continue
        for arrived, sent in zip(result.arrivals, entry["times"], strict=False):
            out.append((arrived - sent) * 1000)
    return out


@contextmanager
def gc_paused() -> Iterator[None]:
    """No garbage collection in the load client while it records arrivals.

    A full collection of the client's heap (tens of thousands of recorded chunks)
    stalls its loop for ~100 ms, which would be counted as chatsite's latency.
    """
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def client_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


async def run_scenario(site: Site, scenario: Scenario) -> dict[str, Any]:
    ends = token_ends(scenario.tokens)
    site.configure(
        tps=scenario.tps,
        answer_tokens=scenario.tokens,
        answer_text=answer_text(scenario.tokens),
        ttft_ms=0,
    )
    async with reader_session() as session:
        with gc_paused():
            baseline = await asyncio.gather(
                *(direct(site, ends, session, i) for i in range(scenario.streams))
            )
    base_lat = latencies(list(baseline), site.sim_log())

    via_socket = scenario.via == "ws"
    conversations = site.new_conversations(scenario.streams) if via_socket else []
    if scenario.via == "floor" and site.floor is None:
        site.start_floor()
    tokens_of = site.live_links(conversations) if scenario.viewers else []
    site.configure(
        tps=scenario.tps,
        answer_tokens=scenario.tokens,
        answer_text=answer_text(scenario.tokens),
        ttft_ms=0,
    )
    floor = site.floor if scenario.via == "floor" else None
    servers = [floor.pid] if floor is not None else site.server_pids
    cpu_before = sum(map(cpu_seconds, servers))
    sim_before = cpu_seconds(site.sim_pid)
    client_before = client_cpu_seconds()
    began = time.monotonic()
    with gc_paused():
        if via_socket:
            relayed = await asyncio.gather(
                *(
                    with_viewers(
                        site,
                        pk,
                        tokens_of[i] if tokens_of else None,
                        scenario.viewers,
                        ends,
                        site.nginx.port if scenario.nginx else None,
                    )
                    for i, pk in enumerate(conversations)
                )
            )
        elif scenario.via == "floor":
            relayed = await asyncio.gather(
                *(through_floor(site, i, ends) for i in range(scenario.streams))
            )
        else:
            async with reader_session() as session:
                relayed = await asyncio.gather(
                    *(
                        api.through_api(
                            site.web_url,
                            site.api_key,
                            scenario.via,
                            f"bench api {i}",
                            ends,
                            session,
                        )
                        for i in range(scenario.streams)
                    )
                )
    elapsed = time.monotonic() - began
    cpu_used = sum(map(cpu_seconds, servers)) - cpu_before
    sim_used = cpu_seconds(site.sim_pid) - sim_before
    client_used = client_cpu_seconds() - client_before
    log = site.sim_log()
    relay_lat = latencies(list(relayed), log)
    tokens = sum(len(r.arrivals) for r in relayed)

    def ttft(results: list[StreamResult]) -> float:
        firsts = [(r.first_token - r.started) * 1000 for r in results if r.first_token]
        return statistics.median(firsts) if firsts else math.nan

    row: dict[str, Any] = {"scenario": scenario.name, "tokens": tokens}
    for q, label in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99"), (1.0, "max")):
        row[f"direct_{label}_ms"] = percentile(base_lat, q)
        row[f"relay_{label}_ms"] = percentile(relay_lat, q)
        row[f"added_{label}_ms"] = row[f"relay_{label}_ms"] - row[f"direct_{label}_ms"]
    row["ttft_added_ms"] = ttft(list(relayed)) - ttft(list(baseline))
    row["frames_per_token"] = sum(r.frames for r in relayed) / max(tokens, 1)
    if scenario.viewers:
        row["viewers"] = scenario.viewers * scenario.streams
        row["viewer_frames_per_token"] = sum(r.viewer_frames for r in relayed) / max(
            tokens * scenario.viewers, 1
        )
    row["cpu_s_per_1k_tokens"] = cpu_used / max(tokens, 1) * 1000
    # The simulator and this load client share the machine with Daphne.
    row["sim_cpu_s_per_1k_tokens"] = sim_used / max(tokens, 1) * 1000
    row["client_cpu_s_per_1k_tokens"] = client_used / max(tokens, 1) * 1000
    row["daphne_rss_mib"] = sum(map(rss_mib, servers))
    row["offered_tps"] = scenario.streams * scenario.tps
    row["delivered_tps"] = tokens / elapsed
    # Admission (no limits here): the time from the question to the upstream request.
    waits = [r.queue_wait_ms for r in relayed if r.queue_wait_ms is not None]
    row["queue_wait_p50_ms"] = percentile(waits, 0.5)
    row["queue_wait_max_ms"] = percentile(waits, 1.0)
    row["refused"] = sum(r.refused for r in relayed)
    row["complete"] = tokens == scenario.streams * scenario.tokens
    return row


# The ramp: more and more 40 tok/s streams until the added latency's p99 passes
# RAMP_LIMIT_MS; the aggregate tok/s there is the relay's capacity on this machine.
RAMP_TPS = 40.0
RAMP_TOKENS = 120
RAMP_LIMIT_MS = 50.0


def ramp_scenario(streams: int) -> Scenario:
    name = f"ramp {streams} @ {RAMP_TPS:g} tok/s"
    return Scenario(name, streams=streams, tps=RAMP_TPS, tokens=RAMP_TOKENS)


async def run_ramp(
    site: Site, start: int = 10, most: int = 640, refine: int = 2
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Double the streams from `start` until the added p99 passes the limit, then
    halve the gap between the last step under it and the first over it `refine`
    times. Returns the rows, by streams, and where the p99 passed the limit (the
    highest step under it and the lowest over it)."""
    rows: list[dict[str, Any]] = []

    async def step(streams: int) -> bool:
        row = await run_scenario(site, ramp_scenario(streams))
        row["streams"] = streams
        rows.append(row)
        # Sockets refused at their handshake: the process is past what it carries.
        return bool(row["added_p99_ms"] > RAMP_LIMIT_MS or row["refused"])

    low, high, streams = 0, 0, start
    while streams <= most:
        if await step(streams):
            high = streams
            break
        low, streams = streams, streams * 2
    for _ in range(refine if low and high else 0):
        middle = (low + high) // 2
        if middle in (low, high):
            break
        if await step(middle):
            high = middle
        else:
            low = middle
    rows.sort(key=lambda r: r["streams"])
    under = [r for r in rows if r["streams"] <= low and low]
    over = [r for r in rows if r["streams"] >= high and high]
    summary = {
        "limit_p99_ms": RAMP_LIMIT_MS,
        "last_under": under[-1]["scenario"] if under else None,
        "last_under_offered_tps": under[-1]["offered_tps"] if under else None,
        "last_under_delivered_tps": under[-1]["delivered_tps"] if under else None,
        "first_over": over[0]["scenario"] if over else None,  # the lowest
        "first_over_offered_tps": over[0]["offered_tps"] if over else None,
        "first_over_delivered_tps": over[0]["delivered_tps"] if over else None,
    }
    return rows, summary
