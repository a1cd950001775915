"""Expensive input: one user's stream and small upload while four other users
send the inputs that cost a server most.

`python -m bench.expensive_input [--sqlite] [--seconds 20]`: the bench
(bench/expensive_input/__init__.py), its table and its JSON."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from pathlib import Path

from bench.expensive_input.memory import RSS_GUARD_MIB
from bench.expensive_input.report import print_table
from bench.expensive_input.run import run
from bench.relay.site import Site

ATTACK_SECONDS = 20.0


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
    out = Path(__file__).resolve().parent.parent / "results"
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
