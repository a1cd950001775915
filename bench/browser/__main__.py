"""Browser latency: from the model server writing a token to that token in the DOM.

`python -m bench.browser [--quick] [--only TEXT] [--ttft-only]` prints the
table and writes bench/results/browser.json (the bench: bench/browser/__init__.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.browser.report import print_table
from bench.browser.run import CHROMIUM_ARGS, run
from bench.browser.scenarios import SCENARIOS, TTFT_SAMPLES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="single-tab streams and TTFT only"
    )
    parser.add_argument(
        "--only",
        metavar="TEXT",
        help="just the stream scenarios whose name holds TEXT (e.g. '10 tabs')",
    )
    parser.add_argument(
        "--chromium-arg",
        action="append",
        default=[],
        metavar="FLAG",
        help="an extra Chromium flag (repeatable), to compare their cost",
    )
    parser.add_argument(
        "--browser-nice",
        type=int,
        default=0,
        metavar="N",
        help="renice the browser (1-19) while streams are measured, so that the"
        " server it shares the cores with is not starved of CPU",
    )
    parser.add_argument(
        "--ttft-only", action="store_true", help="only Enter -> first token"
    )
    args = parser.parse_args()
    chosen = [s for s in SCENARIOS if not (args.quick and s.tabs > 1)]
    if args.only:
        chosen = [s for s in SCENARIOS if args.only in s.name]
    if args.ttft_only:
        chosen = []
    rows = run(
        scenarios=chosen,
        long_answer=not (args.quick or args.only or args.ttft_only),
        ttft_samples=0 if args.only else TTFT_SAMPLES,
        chromium_args=CHROMIUM_ARGS + args.chromium_arg,
        browser_nice=args.browser_nice,
    )
    print_table(rows)
    out = Path(__file__).resolve().parent.parent / "results"
    out.mkdir(exist_ok=True)
    (out / "browser.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
