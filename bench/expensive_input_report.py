"""What `bench.expensive_input` measures and shows: the run's settings and
budgets, one phase's record (the stream's tokens, the small uploads), the rows
and the printed table."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bench.attackers import REQUEST_TIMEOUT, Outcome
from bench.common import (
    StreamResult,
    percentile,
)

TPS = 80.0
REFERENCE_SECONDS = 8.0
UPLOAD_EVERY = 1.0  # seconds between the streaming user's small uploads
SMALL_FILE = b"hello world\n"  # 12 bytes

BUDGETS = {"added_p99_ms": 100.0, "upload_max_s": 1.0, "rss_growth_mib": 300.0}


@dataclass
class Phase:
    stream: StreamResult
    tokens: int  # asked for
    # Per token asked, in ms: its arrival (or the phase's end, if it never
    # came) minus the simulator's send stamp (or, for a token the simulator
    # never sent, when a model at TPS would have sent it).
    latencies_ms: list[float]
    ended: str  # how the answer ended: "done", an error frame's code, ...
    uploads: list[Outcome]

    @property
    def received(self) -> int:
        return len(self.stream.arrivals)

    @property
    def first_token_ms(self) -> float:
        first = self.stream.first_token
        return (first - self.stream.started) * 1000 if first else math.nan


def stream_row(reference: Phase, attacked: Phase) -> dict[str, Any]:
    row: dict[str, Any] = {
        "reference_tokens": reference.tokens,
        "reference_received": reference.received,
        "attacked_tokens": attacked.tokens,
        "attacked_received": attacked.received,
        "reference_ended": reference.ended,
        "attacked_ended": attacked.ended,
        "reference_first_token_ms": reference.first_token_ms,
        "attacked_first_token_ms": attacked.first_token_ms,
    }
    for q, label in ((0.5, "p50"), (0.99, "p99"), (1.0, "max")):
        ref = percentile(reference.latencies_ms, q)
        att = percentile(attacked.latencies_ms, q)
        row[f"reference_{label}_ms"] = ref
        row[f"attacked_{label}_ms"] = att
        row[f"added_{label}_ms"] = att - ref
    return row


def upload_row(phase: Phase) -> dict[str, Any]:
    times = [o.seconds for o in phase.uploads]
    return {
        "count": len(times),
        "answers": dict(Counter(o.answer for o in phase.uploads)),
        "p50_s": percentile(times, 0.5),
        "max_s": percentile(times, 1.0),
    }


def summarize(
    reference: Phase,
    attacked: Phase,
    memory: dict[str, Any],
    found: list[tuple[str, list[dict[str, Any]]]],
    cpu: float,
) -> dict[str, Any]:
    rows = []
    for label, outcomes in found:
        answered = [o["seconds"] for o in outcomes if o["answer"].isdigit()]
        rows.append(
            {
                "attack": label,
                "requests": len(outcomes),
                "answers": dict(Counter(o["answer"] for o in outcomes)),
                "answer_p50_s": percentile(answered, 0.5),
                "answer_max_s": percentile(answered, 1.0),
                "sent_mb": sum(o["sent"] for o in outcomes) / 1e6,
            }
        )
    return {
        "stream": stream_row(reference, attacked),
        "upload_reference": upload_row(reference),
        "upload_attacked": upload_row(attacked),
        "memory": memory,
        "server_cpu_s": cpu,
        "attacks": rows,
    }


def verdict(value: float, budget: float) -> str:
    return "ok" if value <= budget else "FAIL"


def print_table(result: dict[str, Any], seconds: float, database: str) -> None:
    s, m = result["stream"], result["memory"]
    ref_up, att_up = result["upload_reference"], result["upload_attacked"]
    print(
        f"Expensive input: one Daphne process ({database}, production settings). "
        f"The user bench streams at {TPS:g} tok/s and attaches {len(SMALL_FILE)} "
        f"bytes every {UPLOAD_EVERY:g} s, alone ({REFERENCE_SECONDS:g} s, the "
        f"reference), then for {seconds:g} s while 4 other users attack "
        f"(load average {result['load_average']:.1f})."
    )
    # Tokens that never came count to the phase's end: the figures are then
    # lower bounds.
    at_least = "" if s["attacked_received"] == s["attacked_tokens"] else ">="
    print(f"{'':<38}{'reference':>11}{'attacked':>11}{'added':>10}  budget")
    for label in ("p50", "p99", "max"):
        budget = ""
        if label == "p99":
            budget = f"added <= {BUDGETS['added_p99_ms']:g} ms: " + verdict(
                s["added_p99_ms"], BUDGETS["added_p99_ms"]
            )
        print(
            f"{'stream latency per token ' + label + ' (ms)':<38}"
            f"{s[f'reference_{label}_ms']:>11.1f}"
            f"{at_least + format(s[f'attacked_{label}_ms'], '.1f'):>11}"
            f"{at_least + format(s[f'added_{label}_ms'], '.1f'):>10}  {budget}"
        )
    print(
        f"{'stream first token (ms)':<38}{s['reference_first_token_ms']:>11.1f}"
        f"{_number(s['attacked_first_token_ms'], 11, '.1f')}"
    )
    lost = "" if not at_least else "  FAIL (tokens missing)"
    print(
        f"{'stream tokens received':<38}"
        f"{_of(s['reference_received'], s['reference_tokens']):>11}"
        f"{_of(s['attacked_received'], s['attacked_tokens']):>11}{'':>10}{lost}"
    )
    print(f"  ended: alone {s['reference_ended']}; attacked {s['attacked_ended']}")
    print(
        f"{'12-byte upload p50 (s)':<38}{ref_up['p50_s']:>11.3f}"
        f"{att_up['p50_s']:>11.3f}"
    )
    print(
        f"{'12-byte upload max (s)':<38}{ref_up['max_s']:>11.3f}"
        f"{att_up['max_s']:>11.3f}{'':>10}  <= {BUDGETS['upload_max_s']:g} s: "
        + verdict(att_up["max_s"], BUDGETS["upload_max_s"])
    )
    print(
        f"  answers: alone {_counts(ref_up['answers'])}; attacked "
        f"{_counts(att_up['answers'])}"
    )
    memory = verdict(m["rss_growth_mib"], BUDGETS["rss_growth_mib"])
    if m["killed_by_guard"]:
        memory = "FAIL (killed by the bench's guard)"
    print(
        f"{'serving process RSS (MiB)':<38}{m['rss_before_mib']:>11.0f}"
        f"{m['rss_peak_mib']:>11.0f}{m['rss_growth_mib']:>+10.0f}  growth <= "
        f"{BUDGETS['rss_growth_mib']:g} MiB: {memory}"
    )
    print(
        f"  peak; after the attacks {_number(m['rss_after_mib'], 0, '.0f')} MiB; "
        "its child "
        f"processes' peak {m['workers_peak_mib']:.0f} MiB; its CPU during the "
        f"attacks {result['server_cpu_s']:.1f} s"
    )
    print(f"{'attack':<70}{'sent':>5}{'MB':>7}{'p50 s':>7}{'max s':>7}  answers")
    for row in result["attacks"]:
        print(
            f"{row['attack']:<70}{row['requests']:>5}{row['sent_mb']:>7.1f}"
            f"{_number(row['answer_p50_s'], 7, '.2f')}"
            f"{_number(row['answer_max_s'], 7, '.2f')}  "
            f"{_counts(row['answers'])}"
        )
    print(
        f"(p50/max s: time to the status line of the answered requests; an attack "
        f"request is given up after {REQUEST_TIMEOUT:g} s, the server may go on "
        "with it)"
    )


def _of(part: int, whole: int) -> str:
    return f"{part}/{whole}"


def _number(value: float, width: int, spec: str) -> str:
    """`value` right-aligned in `width`; "-" when there is none (NaN)."""
    return f"{'-' if math.isnan(value) else format(value, spec):>{width}}"


def _counts(answers: dict[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in sorted(answers.items())) or "-"
