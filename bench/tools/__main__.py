"""`python -m bench.tools`: a turn of three tool calls, against a plain turn on
the same site (bench/tools/__init__.py); prints the tables and writes
bench/results/tools.json."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from bench.relay.clients import reader_session
from bench.relay.run import gc_paused
from bench.tools.report import gap_row, print_tables, token_rows
from bench.tools.site import ToolSite
from bench.tools.turns import TurnTimes, time_turn

TPS = 80.0
THINKING = " ".join(f"h{i}" for i in range(24))
ANSWER = " ".join(f"t{i}" for i in range(60))
ARGUMENT = " ".join(f"a{i}" for i in range(12))


def script(tool: str) -> list[list[dict[str, Any]]]:
    """Three rounds of one call each: three results, each followed by a
    model request."""
    return [
        [{"name": tool, "arguments": {"text": f"{ARGUMENT} r{n}"}, "id": f"call_{n}"}]
        for n in (1, 2, 3)
    ]


# name, the source switched on (None: a plain turn), the tool the model calls
SCENARIOS = [
    ("plain, before", None, ""),
    ("in-process tool", "stamp", "stamp"),
    ("MCP stdio tool", "mcp:1", "bench__echo"),
    ("plain, after", None, ""),
]


async def run(site: ToolSite, turns: int, chosen: list[Any]) -> list[Any]:
    site.configure(tps=0, ttft_ms=0, answer_tokens=5)
    warm = site.new_conversations(len(chosen))
    results = []
    async with reader_session() as session:
        for (name, source, tool), warm_id in zip(chosen, warm, strict=True):
            conversations = site.new_conversations(turns)
            if source is not None:
                site.with_tools([*conversations, warm_id], source)
            config: dict[str, Any] = {
                "tps": TPS,
                "ttft_ms": 0,
                "thinking_text": THINKING,
                "answer_text": ANSWER,
                "tool_script": script(tool) if tool else None,
                "record_times": True,
            }
            # One untimed turn first: the first of a kind pays for imports
            # (and, over MCP, the first call's session).
            site.configure(**config)
            await time_turn(site, session, warm_id, "warm-up")
            timed: list[TurnTimes] = []
            for number, conversation in enumerate(conversations):
                site.configure(**config)
                with gc_paused():
                    timed.append(
                        await time_turn(site, session, conversation, f"bench {number}")
                    )
            results.append((name, timed))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=20, help="turns per scenario")
    parser.add_argument("--quick", action="store_true", help="5 turns per scenario")
    parser.add_argument("--only", metavar="TEXT", help="scenarios naming TEXT")
    args = parser.parse_args()
    turns = 5 if args.quick else args.turns
    only = (args.only or "").lower()
    chosen = [s for s in SCENARIOS if only in s[0].lower()]
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    site = ToolSite()
    site.start()
    try:
        results = asyncio.run(run(site, turns, chosen))
    finally:
        site.stop()
    tokens = [row for name, timed in results for row in token_rows(name, timed)]
    gaps = [gap_row(name, timed) for name, timed in results]
    print_tables(tokens, gaps)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    out = Path(__file__).resolve().parent.parent / "results"
    out.mkdir(exist_ok=True)
    (out / "tools.json").write_text(
        json.dumps({"tokens": tokens, "gaps": gaps}, indent=2)
    )


if __name__ == "__main__":
    main()
