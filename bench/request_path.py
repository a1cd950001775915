"""Enter -> upstream request (docs/latency.md, rule 8): from a `send` frame
leaving the client to the model server receiving the chat request, against the
floor measured in the same run (the same client posting to the simulator
directly).

`python -m bench.request_path [--samples 40] [--no-postgres]` (run by `make
bench`). Two sites: the one of `python -m bench` (one Daphne on SQLite, no
Redis), and one Daphne (`runsite`) on PostgreSQL and Redis started like the test
suite's (`bench.processes`). Each question is the next turn of one conversation,
asked once the previous answer is done, on one socket opened before the first
(as the page's: a socket opened just before its question would measure its
handshake's queries too); once back to back, and once with the processes idle
for `IDLE` seconds before each question, as between a user's questions: each
process that wakes (the server's, PostgreSQL's, the simulator's) then costs
about half a millisecond more on a 2-core VM, which back to back hides.
Prints a table and writes bench/results/request_path.json; it asserts nothing.
Its `min` column is the path's cost when nothing else wanted the cores (on a
shared machine the percentiles follow its load).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import websockets
from websockets.asyncio.client import ClientConnection

from bench.common import percentile
from bench.site import Site

# The goal of docs/latency.md, rule 8, in ms.
BUDGETS = {"p50_ms": 5.0, "p95_ms": 15.0}
SAMPLES = 40
IDLE = 0.5  # seconds before each question of the "apart" rows


async def _via_socket(ws: ClientConnection, question: str) -> float:
    """The `send` frame's departure (wall clock); returns once the answer is done."""
    sent = time.time()
    await ws.send(json.dumps({"type": "send", "content": question, "client_id": ""}))
    async for raw in ws:
        frame = json.loads(raw)
        if frame["type"] in ("done", "error"):
            if frame["type"] == "error":
                raise RuntimeError(f"the bench's question failed: {frame}")
            break
    return sent


async def _direct(client: httpx.AsyncClient, site: Site, question: str) -> float:
    body = {
        "model": "llama-demo:3b",
        "messages": [{"role": "user", "content": question}],
    }
    sent = time.time()
    response = await client.post(f"{site.sim_url}/api/chat", json=body)
    response.raise_for_status()
    return sent


async def measure(
    site: Site, label: str, samples: int, idle: float = 0.0
) -> dict[str, Any]:
    site.configure(tps=0, answer_tokens=5, ttft_ms=0)
    (conversation,) = site.new_conversations(1)
    sent: dict[str, float] = {}
    # One socket for every question, opened before the first, as the page's
    # (opened when the conversation is shown, long before Enter).
    url = f"ws://127.0.0.1:{site.web_port}/ws/conversations/{conversation}/"
    headers = {"Cookie": site.cookie, "Origin": f"http://127.0.0.1:{site.web_port}"}
    async with (
        httpx.AsyncClient(timeout=30) as client,
        websockets.connect(url, additional_headers=headers) as ws,
    ):
        # Untimed: the process's first answer pays for imports and connections.
        await _via_socket(ws, "warm-up")
        await _direct(client, site, "warm-up direct")
        for n in range(samples):
            question = f"request path {n}"
            await asyncio.sleep(idle)
            sent[question] = await _via_socket(ws, question)
            floor = f"floor {n}"
            await asyncio.sleep(idle)
            sent[floor] = await _direct(client, site, floor)
    started = {
        entry["body"]["messages"][-1]["content"]: entry["started"]
        for entry in site.sim_log()
    }

    def delays(kept: Callable[[str], bool]) -> list[float]:
        return [(started[q] - t) * 1000 for q, t in sent.items() if kept(q)]

    ours = delays(lambda q: q.startswith("request path"))
    floor = delays(lambda q: q.startswith("floor"))
    return {
        "scenario": f"Enter -> upstream request, {label}, "
        + (f"{idle:g} s apart" if idle else "back to back"),
        "samples": len(ours),
        "floor_p50_ms": percentile(floor, 0.5),
        "floor_p95_ms": percentile(floor, 0.95),
        # The least: what the path costs when nothing else wants the cores.
        "min_ms": min(ours),
        "p50_ms": percentile(ours, 0.5),
        "p95_ms": percentile(ours, 0.95),
        "max_ms": percentile(ours, 1.0),
        "load_average": os.getloadavg()[0],
    }


def _rows(site: Site, label: str, samples: int) -> list[dict[str, Any]]:
    return [
        asyncio.run(measure(site, label, samples)),
        asyncio.run(measure(site, label, samples, IDLE)),
    ]


def _sqlite_rows(samples: int) -> list[dict[str, Any]]:
    site = Site()
    site.start()
    try:
        return _rows(site, "SQLite", samples)
    finally:
        site.stop()


def _postgres_rows(samples: int) -> list[dict[str, Any]]:
    from bench.processes import SharedSite, postgres_and_redis

    with postgres_and_redis("bench.request_path") as (database_url, redis_url):
        site = SharedSite(1, database_url, redis_url)
        site.start()
        try:
            return _rows(site, "PostgreSQL + Redis", samples)
        finally:
            site.stop()


def verdict(row: dict[str, Any]) -> str:
    failed = [f"{k}>{v:g}" for k, v in BUDGETS.items() if row[k] > v]
    return "FAIL " + ", ".join(failed) if failed else "ok"


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'scenario':<60}{'n':>4}{'floor p50':>10}{'floor p95':>10}"
        f"{'min':>8}{'p50':>8}{'p95':>8}{'max':>8}{'load':>6}  budget"
    )
    for r in rows:
        print(
            f"{r['scenario']:<60}{r['samples']:>4}{r['floor_p50_ms']:>10.2f}"
            f"{r['floor_p95_ms']:>10.2f}{r['min_ms']:>8.2f}{r['p50_ms']:>8.2f}"
            f"{r['p95_ms']:>8.2f}"
            f"{r['max_ms']:>8.2f}{r['load_average']:>6.2f}  {verdict(r)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=SAMPLES)
    parser.add_argument(
        "--postgres", action=argparse.BooleanOptionalAction, default=True
    )
    args = parser.parse_args()
    rows = _sqlite_rows(args.samples)
    if args.postgres:
        rows += _postgres_rows(args.samples)
    print(
        "Enter -> upstream request (ms): a `send` frame leaving the client to the "
        "simulator receiving the chat request; floor: the same client posting to "
        "the simulator directly, same run. Budget: p50 <= 5, p95 <= 15."
    )
    print_table(rows)
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "request_path.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
