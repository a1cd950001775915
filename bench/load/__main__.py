"""A team's load on one Daphne process, production settings, then every socket
closed at once: what broke, not how fast.

`python -m bench.load [--seconds 60]`: the bench (bench/load/__init__.py), its
table and its JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from bench.load.report import print_table
from bench.load.run import run
from bench.load.site import ANSWER_TOKENS, SOCKETS_PER_USER, TPS, USERS, Site


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=60.0,
        help="how long the sockets talk before all are closed (default 60)",
    )
    parser.add_argument(
        "--answer-tokens",
        type=int,
        default=ANSWER_TOKENS,
        help=f"tokens per answer at {TPS:g} tok/s (default {ANSWER_TOKENS})",
    )
    parser.add_argument(
        "--users",
        type=int,
        default=USERS,
        help=f"users, with {SOCKETS_PER_USER} sockets each (default {USERS})",
    )
    parser.add_argument(
        "--open-over",
        type=float,
        default=2.0,
        help="seconds over which the sockets are opened (default 2)",
    )
    args = parser.parse_args()
    site = Site()
    try:
        site.start(args.answer_tokens)
        result = asyncio.run(
            run(site, args.seconds, args.answer_tokens, args.open_over, args.users)
        )
    finally:
        out = Path(__file__).resolve().parent.parent / "results"
        out.mkdir(exist_ok=True)
        if site.log.exists():  # for a look at what the server logged
            (out / "load-daphne.log").write_bytes(site.log.read_bytes())
        site.stop()
    print(
        f"Load: {args.users} users x {SOCKETS_PER_USER} sockets on one Daphne process "
        f"(production settings, PostgreSQL + Redis), {TPS:g} tok/s for "
        f"{args.seconds:g} s, then all closed at once."
    )
    print_table(result)
    for line, count in result["server_errors"].items():
        print(f"  {count:>5} x {line}")
    (out / "load.json").write_text(
        json.dumps({"seconds": args.seconds, **result}, indent=2)
    )


if __name__ == "__main__":
    main()
