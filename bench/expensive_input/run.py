"""The bench's run: the reference alone, then under attack, into figures."""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections import Counter
from typing import Any

from bench.common import (
    cpu_seconds,
    percentile,
)
from bench.expensive_input.attackers import Attackers
from bench.expensive_input.memory import Memory
from bench.expensive_input.phase import (
    REFERENCE_SECONDS,
    STREAM_GRACE,
    Phase,
    stream_and_upload,
)
from bench.relay.site import Site


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
