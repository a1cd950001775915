"""`bench.browser`'s rows against their budgets and the bare relay's, and
the printed table."""

from __future__ import annotations

import os
from typing import Any

# The budgets of docs/latency.md, in ms.
BUDGETS: dict[str, dict[str, float]] = {
    "1 tab @ 80 tok/s": {"p99_ms": 10},
    "1 tab @ 80 tok/s, one paragraph": {"p99_ms": 10},
    "1 tab @ 80 tok/s, one Chinese paragraph": {"p99_ms": 10},
    "1 tab @ 400 tok/s": {"p99_ms": 30},
    "10 tabs @ 80 tok/s": {"p99_ms": 300},
    # Rule 8's goal: Enter -> the model server has the request, and the first
    # token in the DOM minus the model's own delay.
    "Enter -> first token": {
        "ttft_added_p50_ms": 10,
        "enter_to_model_request_p50_ms": 5,
        "enter_to_model_request_p95_ms": 15,
    },
    "20k-token answer, 200 messages": {"longest_task_ms": 50},
}


# A token's cost must not grow with the paragraph it lands in: on one long
# paragraph the page stays within this many times the bare relay's p99
# (``bench/floor.py``) measured in the same run.
FLOOR_RATIO_BUDGETS: dict[str, float] = {
    "1 tab @ 80 tok/s, one paragraph": 1.5,
    "1 tab @ 80 tok/s, one Chinese paragraph": 1.5,
}


def verdict(row: dict[str, Any]) -> str:
    budgets = BUDGETS.get(row["scenario"], {})
    failed = [f"{k}>{v:g}" for k, v in budgets.items() if row[k] > v]
    ratio = FLOOR_RATIO_BUDGETS.get(row["scenario"])
    if ratio is not None and row["x_floor_p99"] > ratio:
        failed.append(f"p99 > {ratio:g} x the floor's")
    if not row["complete"]:
        failed.append("tokens missing")
    if row.get("all_visible") is False:
        failed.append("a page was not visible")
    return "FAIL " + ", ".join(failed) if failed else "ok"


def fmt(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def print_table(rows: list[dict[str, Any]]) -> None:
    streams = [r for r in rows if "p50_ms" in r]
    width = max((len(r["scenario"]) for r in streams), default=8)
    print("Model server wrote the token -> token in the page's DOM (ms)")
    print(
        f"{'scenario':<{width}} {'tokens':>6} {'p50':>6} {'p95':>6} {'p99':>6}"
        f" {'max':>6} {'sock50':>6} {'sock99':>6} {'page50':>6} {'page99':>6}"
        f" {'p99/floor':>9}"
    )
    for r in streams:
        ratio = f"{r['x_floor_p99']:.2f}" if "x_floor_p99" in r else ""
        print(
            f"{r['scenario']:<{width}} {r['tokens']:>6} {r['p50_ms']:>6.1f} "
            f"{r['p95_ms']:>6.1f} {r['p99_ms']:>6.1f} {r['max_ms']:>6.1f} "
            f"{r['socket_p50_ms']:>6.1f} {r['socket_p99_ms']:>6.1f} "
            f"{r['page_p50_ms']:>6.1f} {r['page_p99_ms']:>6.1f} {ratio:>9}"
            f"  {verdict(r)}"
        )
    print("sock50/99: the same, to the socket's message event (server + network)")
    print("page50/99: the socket's message event -> the word in the DOM (the page)")
    print("[floor]: a bare relay (bench/floor.py) to the same simulator, same run")
    print(
        "CPU seconds per 1,000 tokens (server / simulator / browser, all processes"
        " [of which renderers, GPU process]); the floor's server is the bare relay:"
    )
    for r in streams:
        print(
            f"  {r['scenario']:<{width}} {r['cpu_daphne_s']:.3f} / "
            f"{r['cpu_simulator_s']:.3f} / {r['cpu_browser_s']:.3f} "
            f"[{r['cpu_renderers_s']:.3f}, {r['cpu_gpu_s']:.3f}]"
        )
    print(
        f"load average at the end: {os.getloadavg()[0]:.1f} (the machine's cores: "
        f"{os.cpu_count()})"
    )
    for r in rows:
        if r in streams:
            continue
        figures = ", ".join(
            f"{k}={fmt(v)}"
            for k, v in r.items()
            if k not in {"scenario", "complete", "tokens", "slow_frames"}
        )
        print(f"{r['scenario']}: tokens={r['tokens']}, {figures}  {verdict(r)}")
