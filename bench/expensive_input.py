"""Expensive input: one user's stream and small upload while four other users
send the inputs that cost a server most.

`python -m bench.expensive_input [--sqlite] [--seconds 20]` (run by `make
bench`). One Daphne process with production settings on PostgreSQL and Redis
(started like the test suite's, `bench.processes`), or on the SQLite default
with `--sqlite`, and the simulator. The user `bench` streams an answer at 80
tok/s over the conversation's WebSocket and attaches a 12-byte text file once
a second: first alone (the reference), then for `--seconds` while four other
users, each in a loop of one request at a time, send

1. a 50 MB multipart body to `/`, signed out and without a CSRF token;
2. a 50 MB multipart body to the attachment route, signed in;
3. a ~70 kB ZIP of a valid-looking chatsite export whose one answer inflates
   to ~72 MB (deflate's best ratio is about 1,000:1) to the import route;
4. a ~12 kB PDF whose 60 pages share one content stream of 10,000 text
   operators (about 0.3 CPU-seconds per page in pypdf) as an attachment.

Each attack request is given up after `REQUEST_TIMEOUT` s (the server may go
on with it, as it would for a real attacker who leaves), and the attackers run
in a process of their own, so their sending costs the stream's client nothing.

The table: the stream's latency per token (arrival minus the simulator's send
stamp) under attack against the reference, as added p50/p99/max; the 12-byte
upload's time to answer; the serving process's resident memory growth (the
peak, VmHWM after a reset through /proc/<pid>/clear_refs, and VmRSS sampled,
from the memory before the attacks); and each attack's outcomes (status codes,
or how the connection ended) and time to answer. Budgets are printed as
pass/fail, never asserted. Writes bench/results/expensive_input.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import multiprocessing
import os
import signal
import time
from pathlib import Path
from typing import Any

import websockets
from websockets.exceptions import ConnectionClosed

from bench.attackers import (
    STOP_GRACE,
    Outcome,
    attackers,
    keep_posting,
    request_headers,
    wind_down,
)
from bench.common import (
    StreamResult,
    answer_text,
    token_ends,
)
from bench.expensive_input_report import (
    REFERENCE_SECONDS,
    SMALL_FILE,
    TPS,
    UPLOAD_EVERY,
    Phase,
    print_table,
    summarize,
)
from bench.hostile_inputs import ATTACHMENTS_PATH, multipart
from bench.procfs import cpu_seconds, descendants, rss_mib
from bench.relay import gc_paused, read_answer
from bench.site import Site

ATTACK_SECONDS = 20.0
SMALL_UPLOAD_TIMEOUT = 20.0
# After the stream's own length: how long it may still take to arrive.
STREAM_GRACE = 30.0
LEAD = 1.0  # seconds the attacks run before the stream is asked
SAMPLE_EVERY = 0.1  # the serving process's memory, sampled
# The bench kills the serving process past this resident memory: the machine
# may be shared, and one import has taken gigabytes.
RSS_GUARD_MIB = 6144


# ---------------------------------------------------------------- one phase


def token_latencies(
    result: StreamResult, log: list[dict[str, Any]], tokens: int, ended: float
) -> list[float]:
    """Phase.latencies_ms of `result`, from the simulator's `log`; `ended`:
    when the phase stopped waiting for tokens."""
    entry = next(
        (e for e in log if e["body"]["messages"][-1]["content"] == result.key), {}
    )
    stamps = entry.get("times", [])
    out = []
    for i in range(tokens):
        sent = stamps[i] if i < len(stamps) else result.started + i / TPS
        if i < len(result.arrivals):
            out.append((result.arrivals[i] - sent) * 1000)
        else:  # at least this late (a token not yet due when it ended: lost)
            out.append(max(0.0, ended - sent) * 1000)
    return out


async def stream_and_upload(
    site: Site,
    conversation: int,
    seconds: float,
    attackers: Attackers | None = None,
) -> Phase:
    """One answer of `seconds` at TPS over the conversation's socket, and the
    small uploads beside it until it ends. The socket is opened first, as the
    page's is when the conversation is shown; then the attackers (if any) are
    started; then the question is asked. The attackers stop when it ends."""
    tokens = int(seconds * TPS)
    site.configure(
        tps=TPS, answer_tokens=tokens, answer_text=answer_text(tokens), ttft_ms=0
    )
    result = StreamResult(key=f"bench conversation {conversation}")
    url = f"ws://127.0.0.1:{site.web_port}/ws/conversations/{conversation}/"
    headers = {"Cookie": site.cookie, "Origin": site.web_url}
    ended = "no answer by the deadline"
    uploads: list[Outcome] = []
    async with websockets.connect(
        url, additional_headers=headers, max_size=None, close_timeout=1
    ) as ws:
        if attackers is not None:
            await attackers.start()
        stopping = asyncio.Event()
        small = multipart("note.txt", "text/plain", SMALL_FILE)
        uploading = asyncio.create_task(
            keep_posting(
                site.web_port,
                ATTACHMENTS_PATH,
                small,
                request_headers(site.cookie),
                uploads,
                stopping,
                SMALL_UPLOAD_TIMEOUT,
                every=UPLOAD_EVERY,
            )
        )
        with gc_paused():
            result.started = time.time()
            try:
                async with asyncio.timeout(seconds + STREAM_GRACE):
                    question = {"type": "send", "content": result.key, "client_id": "b"}
                    await ws.send(json.dumps(question))
                    end = await read_answer(ws, result, token_ends(tokens))
                    ended = "done" if end["type"] == "done" else end.get("code", "?")
            except TimeoutError:
                pass
            except ConnectionClosed:
                ended = f"socket closed by the server ({ws.close_code})"
            finished = time.time()
            if attackers is not None:
                attackers.stop()
            await wind_down([uploading], stopping)
    found = token_latencies(result, site.sim_log(), tokens, finished)
    return Phase(result, tokens, found, ended, uploads)


class Attackers:
    """The attackers' process (`attackers`), started and stopped from here."""

    def __init__(self, port: int, cookies: list[str], bound: float) -> None:
        context = multiprocessing.get_context("spawn")
        self.ready, self.stopped = context.Event(), context.Event()
        self.results = context.Queue()
        self.process = context.Process(
            target=attackers,
            args=(port, cookies, self.ready, self.stopped, self.results, bound),
        )

    async def start(self) -> None:
        """Once they have begun (and LEAD s more, so their requests are in
        flight)."""
        self.process.start()
        if not await asyncio.to_thread(self.ready.wait, 120):
            raise RuntimeError("the attackers never got ready")
        await asyncio.sleep(LEAD)

    def stop(self) -> None:
        self.stopped.set()

    async def outcomes(self) -> list[tuple[str, list[dict[str, Any]]]]:
        self.stop()
        found = await asyncio.to_thread(self.results.get, True, STOP_GRACE + 30)
        return list(found)

    def end(self) -> None:
        self.stop()
        if self.process.pid is not None:
            self.process.join(STOP_GRACE + 30)
            if self.process.is_alive():
                self.process.kill()


# ---------------------------------------------------------------- the memory


class Memory:
    """The serving process's resident memory while a phase runs: sampled, and
    its peak (VmHWM) after a reset. Kills the process past RSS_GUARD_MIB."""

    def __init__(self, pid: int, guard_mib: float) -> None:
        self.pid = pid
        self.guard_mib = guard_mib
        self.before = rss_mib(pid)
        self.sampled_peak = self.before
        self.workers_peak = 0.0  # its child processes together (worker pools)
        self.killed = False
        # Writing 5 resets VmHWM to the present VmRSS (proc(5)).
        try:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
            self.reset = True
        except OSError:
            self.reset = False

    def sample(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            now = rss_mib(self.pid)
            self.sampled_peak = max(self.sampled_peak, now)
            workers = sum(rss_mib(child) for child in descendants(self.pid))
            self.workers_peak = max(self.workers_peak, workers)
            if now > self.guard_mib and not self.killed:
                self.killed = True
                os.kill(self.pid, signal.SIGKILL)

    async def watch(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SAMPLE_EVERY)

    def figures(self) -> dict[str, Any]:
        self.sample()
        peak = self.sampled_peak
        with contextlib.suppress(OSError):
            if self.reset:
                peak = max(peak, rss_mib(self.pid, "VmHWM"))
        try:
            after = rss_mib(self.pid)
        except OSError:
            after = float("nan")
        return {
            "rss_before_mib": self.before,
            "rss_peak_mib": peak,
            "rss_after_mib": after,
            "rss_growth_mib": peak - self.before,
            "workers_peak_mib": self.workers_peak,
            "killed_by_guard": self.killed,
        }


# ---------------------------------------------------------------- the run


async def run(site: Site, seconds: float, guard_mib: float) -> dict[str, Any]:
    began = time.monotonic()
    cookies = site.sign_in([f"attacker{n}" for n in range(1, 5)])
    warm_up, alone, under_attack = site.new_conversations(3)
    # Untimed: the first answer and upload of a process pay for imports.
    await stream_and_upload(site, warm_up, 0.5)
    reference = await stream_and_upload(site, alone, REFERENCE_SECONDS)
    attack_began = time.monotonic()

    serving = site.server_pids[0]
    attackers = Attackers(site.web_port, cookies, seconds + STREAM_GRACE)
    memory = Memory(serving, guard_mib)
    cpu_before = cpu_seconds(serving)
    watched = asyncio.Event()
    watching = asyncio.create_task(memory.watch(watched))
    try:
        attacked = await stream_and_upload(site, under_attack, seconds, attackers)
        found = await attackers.outcomes()
    finally:
        watched.set()
        await watching
        attackers.end()
    try:
        cpu = cpu_seconds(serving) - cpu_before
    except OSError:
        cpu = math.nan
    result = summarize(reference, attacked, memory.figures(), found, cpu)
    # On a shared machine the figures follow its load: said beside them.
    result["load_average"] = os.getloadavg()[0]
    result["reference_s"] = attack_began - began
    result["attack_s"] = time.monotonic() - attack_began
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=ATTACK_SECONDS,
        help=f"the stream under attack, in seconds (default {ATTACK_SECONDS:g})",
    )
    parser.add_argument(
        "--sqlite",
        action="store_true",
        help="the SQLite default, no Redis (default: PostgreSQL and Redis)",
    )
    parser.add_argument(
        "--rss-guard",
        type=float,
        default=RSS_GUARD_MIB,
        metavar="MIB",
        help="kill the serving process past this resident memory "
        f"(default {RSS_GUARD_MIB})",
    )
    args = parser.parse_args()
    began = time.monotonic()
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    with contextlib.ExitStack() as stack:
        if args.sqlite:
            site, database = Site(), "SQLite"
        else:
            from bench.processes import SharedSite, postgres_and_redis

            urls = stack.enter_context(postgres_and_redis("bench.expensive_input"))
            site, database = SharedSite(1, *urls), "PostgreSQL + Redis"
        # The uploads go to a folder of the run's own.
        site.env["CHATSITE_MEDIA_ROOT"] = str(Path(site.tmp.name) / "media")
        site.start()
        stack.callback(site.stop)
        started = time.monotonic() - began
        if isinstance(log := getattr(site, "log", None), Path):
            # runsite's log, for a look at what the server said (before stop).
            copy = out / "expensive_input-daphne.log"
            stack.callback(lambda: copy.write_bytes(log.read_bytes()))
        result = asyncio.run(run(site, args.seconds, args.rss_guard))
    print_table(result, args.seconds, database)
    print(
        f"(the whole run took {time.monotonic() - began:.0f} s: {started:.0f} to "
        f"start the site, {result['reference_s']:.0f} alone, "
        f"{result['attack_s']:.0f} under attack)"
    )
    result |= {"seconds": args.seconds, "database": database}
    (out / "expensive_input.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
