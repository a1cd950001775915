"""MCP tool calls: the calling loop's stall on a 50 MB result, and a call's
time over Streamable HTTP with and without pooled sessions
(bench/mcp/__init__.py). `python -m bench.mcp [--calls 40]`."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.common import free_port, percentile

ROOT = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, "-m", "tests.tools.mcp.tool_server"]
RESULT_CHARS = 50_000_000
BUDGETS = {"stall_ms": 100.0}


@contextmanager
def http_server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [*SERVER, "http", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


async def run(url: str, calls: int) -> dict[str, Any]:
    from bench.mcp.measure import per_call, stall
    from chat.tools.mcp.config import ServerConfig

    http = ServerConfig(pk=1, slug="http", name="http", transport="http", url=url)
    stdio = ServerConfig(
        pk=2,
        slug="stdio",
        name="stdio",
        transport="stdio",
        command=SERVER[0],
        args=(*SERVER[1:], "stdio"),
    )
    stalls = []
    for config in (http, stdio):
        for in_worker in (False, True):
            found = await stall(config, in_worker=in_worker, chars=RESULT_CHARS)
            assert found.outcome.cut, found.outcome
            stalls.append(
                {
                    "transport": config.transport,
                    "parsed": "worker process" if in_worker else "MCP thread",
                    "longest_gap_ms": found.longest_gap_ms,
                    "call_s": found.seconds,
                }
            )
    rows = []
    for pooled in (False, True):
        times = await per_call(http, pooled=pooled, calls=calls)
        rows.append(
            {
                "sessions": "pooled" if pooled else "one per call",
                **{
                    f"{label}_ms": percentile(times, q)
                    for label, q in (("p50", 0.5), ("p90", 0.9), ("max", 1.0))
                },
            }
        )
    return {"stalls": stalls, "calls": rows, "load_average": os.getloadavg()[0]}


def print_table(result: dict[str, Any], calls: int) -> None:
    print(
        f"MCP tools: our MCP server, a {RESULT_CHARS / 1e6:g} MB result cut to "
        f"TOOL_RESULT_MAX_CHARS (load average {result['load_average']:.1f})."
    )
    print(f"{'50 MB result':<34}{'longest gap ms':>15}{'call s':>8}  budget")
    for row in result["stalls"]:
        verdict = "ok" if row["longest_gap_ms"] <= BUDGETS["stall_ms"] else "FAIL"
        budget = (
            f"gap <= {BUDGETS['stall_ms']:g} ms: {verdict}"
            if row["parsed"] != "MCP thread"
            else "(the reference)"
        )
        print(
            f"{row['transport'] + ', parsed on the ' + row['parsed']:<34}"
            f"{row['longest_gap_ms']:>15.1f}{row['call_s']:>8.2f}  {budget}"
        )
    heading = f"{calls} calls of add over HTTP"
    print(f"{heading:<34}{'p50 ms':>8}{'p90 ms':>8}{'max ms':>8}")
    for row in result["calls"]:
        print(
            f"{'sessions ' + row['sessions']:<34}{row['p50_ms']:>8.1f}"
            f"{row['p90_ms']:>8.1f}{row['max_ms']:>8.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatsite.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    with http_server() as url:
        result = asyncio.run(run(url, args.calls))
    print_table(result, args.calls)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "tools.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
