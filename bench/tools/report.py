"""The tools bench's rows and tables: per scenario, round and step kind, the
added latency per token against the direct reads of the same requests (the
relay bench's budgets for one stream at 80 tok/s); per tool source, the gap
from a result to the next model request (budget: 5 ms p50)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from bench.common import percentile
from bench.tools.turns import KINDS, TurnTimes

# bench/__main__.py's BUDGETS for "1 stream @ 80 tok/s", in ms.
ADDED_BUDGET = {"added_p50_ms": 1.0, "added_p99_ms": 5.0}
GAP_BUDGET_P50_MS = 5.0


def token_rows(scenario: str, turns: list[TurnTimes]) -> list[dict[str, Any]]:
    relayed: dict[tuple[int, str], list[float]] = defaultdict(list)
    direct: dict[tuple[int, str], list[float]] = defaultdict(list)
    for turn in turns:
        for key, values in turn.relayed.items():
            relayed[key] += values
        for key, values in turn.direct.items():
            direct[key] += values
    rows = []
    for number, kind in sorted(relayed, key=lambda k: (k[0], KINDS.index(k[1]))):
        ours, theirs = relayed[(number, kind)], direct[(number, kind)]
        row: dict[str, Any] = {
            "scenario": scenario,
            "round": number,
            "kind": kind,
            "tokens": len(ours),
        }
        for q, label in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99"), (1.0, "max")):
            row[f"direct_{label}_ms"] = percentile(theirs, q)
            row[f"relay_{label}_ms"] = percentile(ours, q)
            added = row[f"relay_{label}_ms"] - row[f"direct_{label}_ms"]
            row[f"added_{label}_ms"] = added
        rows.append(row)
    return rows


def gap_row(scenario: str, turns: list[TurnTimes]) -> dict[str, Any]:
    gaps = [gap for turn in turns for gap in turn.gaps]
    return {
        "scenario": scenario,
        "gaps": len(gaps),
        "gap_p50_ms": percentile(gaps, 0.5),
        "gap_p95_ms": percentile(gaps, 0.95),
        "gap_max_ms": percentile(gaps, 1.0),
        "requests_per_turn": sorted({turn.requests for turn in turns}),
        "statuses": sorted({turn.status for turn in turns}),
        "lost_tokens": sum(turn.lost for turn in turns),
        "unmatched": sum(turn.unmatched for turn in turns),
    }


def token_verdict(row: dict[str, Any]) -> str:
    failed = [f"{k}>{v}" for k, v in ADDED_BUDGET.items() if row[k] > v]
    return "FAIL " + ", ".join(failed) if failed else "ok"


def gap_verdict(row: dict[str, Any]) -> str:
    if row["lost_tokens"] or row["unmatched"]:
        return f"FAIL {row['lost_tokens']} tokens lost, {row['unmatched']} unpaired"
    if row["gap_p50_ms"] > GAP_BUDGET_P50_MS:
        return f"FAIL gap_p50>{GAP_BUDGET_P50_MS}"
    return "ok"


def print_tables(tokens: list[dict[str, Any]], gaps: list[dict[str, Any]]) -> None:
    print(
        "Added latency per token (ms) by round and step: chatsite's socket minus "
        "the same requests read from the simulator directly, same run."
    )
    head = ["scenario", "round", "step", "tokens", "dir p50", "rel p50"]
    head += ["add p50", "add p95", "add p99", "add max", "budget"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in tokens:
        cells = [row["scenario"], str(row["round"]), row["kind"], str(row["tokens"])]
        cells += [
            f"{row[key]:.2f}"
            for key in ("direct_p50_ms", "relay_p50_ms", "added_p50_ms")
            + ("added_p95_ms", "added_p99_ms", "added_max_ms")
        ]
        print("| " + " | ".join([*cells, token_verdict(row)]) + " |")
    print()
    print(
        "A tool's result in the engine's hands to the next model request at the "
        "simulator (ms):"
    )
    head = ["source", "gaps", "p50", "p95", "max", "requests/turn", "budget"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in gaps:
        cells = [row["scenario"], str(row["gaps"])]
        cells += [f"{row[k]:.2f}" for k in ("gap_p50_ms", "gap_p95_ms", "gap_max_ms")]
        cells.append(",".join(map(str, row["requests_per_turn"])))
        print("| " + " | ".join([*cells, gap_verdict(row)]) + " |")
